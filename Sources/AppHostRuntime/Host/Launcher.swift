/// How the host starts an app process (README.md, "How apps are launched").
public enum Launcher: String, Sendable, CaseIterable {
    /// Forked from the host's template process, which has loaded the Swift runtime, Foundation
    /// and Dispatch once and never runs app code. Children share its address-space layout.
    case template
    /// A fresh exec of the apphost binary per app: a new address-space layout each time.
    case exec
}
