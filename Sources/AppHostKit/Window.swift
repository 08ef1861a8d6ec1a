/// What the app shows: the SDK's stand-in for a window, and what the host's snapshot records
/// after `applicationDidEnterBackground` returns (like the image iOS shows in the app switcher).
///
/// Hide anything private in `applicationWillResignActive` or `applicationDidEnterBackground`:
/// whatever the visible windows show when that returns ends up in the snapshot.
@MainActor
open class Window {
    /// The window's content, as text.
    open var content: String
    /// A hidden window is left out of snapshots.
    public var isHidden = false

    public init(content: String = "") {
        self.content = content
    }

    /// Shows the window: it becomes part of the app's snapshot.
    open func makeKeyAndVisible() {
        isHidden = false
        let application = Application.shared
        if !application.windows.contains(where: { $0 === self }) { application.windows.append(self) }
    }
}
