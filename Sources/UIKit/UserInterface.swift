public import Foundation
public import AppHostKit

// The user interface an app delegate sets up, as headless objects. apphost has no screen and draws
// nothing, but a delegate that makes a window, gives it a root view controller, a navigation
// controller and colours, and shows it, compiles and runs unchanged: each object keeps what the
// app set, so code (and a test) can read it back, and a window's snapshot names its root view
// controller (docs/porting.md, "Porting iOS code"). Nothing here lays out, draws or receives events.

/// `UIWindow`: AppHostKit's `Window` with UIKit's properties. Its snapshot is its `content`
/// when the app set one, else its root view controller's description
/// (`UINavigationController > ListViewController "Lists"`).
@MainActor
open class UIWindow: Window {
    /// The view controller the app made the window's root; its view is loaded once the window
    /// is visible, as UIKit loads it.
    open var rootViewController: UIViewController? {
        didSet { if isVisible { rootViewController?.loadViewHierarchy() } }
    }
    private var isVisible = false
    /// What the app set; the screen's bounds unless given.
    open var frame: CGRect = UIScreen.main.bounds
    /// What the app set.
    open var backgroundColor: UIColor?
    /// What the app set.
    open var tintColor: UIColor?
    /// Whether `makeKeyAndVisible()` or `makeKey()` was called last on this window.
    open private(set) var isKeyWindow = false

    public override init(content: String = "") {
        super.init(content: content)
    }

    /// A window of `frame`, as UIKit's designated initializer.
    public convenience init(frame: CGRect) {
        self.init(content: "")
        self.frame = frame
    }

    open override var content: String {
        get { super.content.isEmpty ? rootViewController?.hierarchyDescription ?? "" : super.content }
        set { super.content = newValue }
    }

    /// Makes the window key; it is shown (part of the snapshot) once visible.
    open func makeKey() { isKeyWindow = true }

    open override func makeKeyAndVisible() {
        isKeyWindow = true
        isVisible = true
        super.makeKeyAndVisible()
        rootViewController?.loadViewHierarchy()
    }
}

/// `UIView`: a frame, a colour and subviews, as the app set them.
@MainActor
open class UIView: UIResponder {
    open var frame: CGRect
    open var bounds: CGRect { CGRect(origin: .zero, size: frame.size) }
    open var backgroundColor: UIColor?
    open var tintColor: UIColor?
    open var isHidden = false
    open var alpha: CGFloat = 1
    open var tag = 0
    open private(set) var subviews: [UIView] = []
    open private(set) weak var superview: UIView?

    public init(frame: CGRect) {
        self.frame = frame
        super.init()
    }

    public convenience override init() { self.init(frame: .zero) }

    open func addSubview(_ view: UIView) {
        view.removeFromSuperview()
        subviews.append(view)
        view.superview = self
    }

    open func removeFromSuperview() {
        superview?.subviews.removeAll { $0 === self }
        superview = nil
    }
}

/// `UIViewController`: a title, a view made on first use, and the controllers it presented.
@MainActor
open class UIViewController: UIResponder {
    open var title: String?
    /// The navigation controller whose stack holds this controller.
    open internal(set) weak var navigationController: UINavigationController?
    /// The controller this one presented and has not dismissed.
    open private(set) var presentedViewController: UIViewController?
    private var loadedView: UIView?

    public init(nibName nibNameOrNil: String?, bundle nibBundleOrNil: Bundle?) {
        super.init()
    }

    /// Views come from code here (no storyboards or nibs): decoding one is not supported, as
    /// the `fatalError` iOS code writes in its own `init?(coder:)` says.
    public required init?(coder: NSCoder) {
        return nil
    }

    public convenience override init() { self.init(nibName: nil, bundle: nil) }

    /// The view, made by `loadView()` (then `viewDidLoad()`) the first time it is asked for.
    open var view: UIView! {
        get {
            loadViewIfNeeded()
            return loadedView
        }
        set { loadedView = newValue }
    }

    open var isViewLoaded: Bool { loadedView != nil }

    /// Makes a view of the screen's size.
    open func loadView() { loadedView = UIView(frame: UIScreen.main.bounds) }

    open func viewDidLoad() {}

    open func loadViewIfNeeded() {
        guard loadedView == nil else { return }
        loadView()
        viewDidLoad()
    }

    /// Keeps `viewControllerToPresent` as the presented controller; `completion` runs at once.
    open func present(_ viewControllerToPresent: UIViewController, animated flag: Bool, completion: (() -> Void)? = nil) {
        presentedViewController = viewControllerToPresent
        completion?()
    }

    /// Forgets the presented controller; `completion` runs at once.
    open func dismiss(animated flag: Bool, completion: (() -> Void)? = nil) {
        presentedViewController = nil
        completion?()
    }

    /// The controller's type and title, and what it holds: what a window's snapshot shows.
    var hierarchyDescription: String {
        let name = String(describing: type(of: self)) + (title.map { " \"\($0)\"" } ?? "")
        return children.isEmpty ? name : "\(name) > " + children.map(\.hierarchyDescription).joined(separator: ", ")
    }

    /// The controllers this one shows (a navigation controller's stack).
    var children: [UIViewController] { [] }

    /// Loads this controller's view and those of the controllers it shows on screen, as a window
    /// does when it becomes visible (`viewDidLoad` runs).
    func loadViewHierarchy() {
        loadViewIfNeeded()
        children.last?.loadViewHierarchy()
    }
}

/// `UINavigationController`: a stack of view controllers, as the app pushed and popped them.
@MainActor
open class UINavigationController: UIViewController {
    open var viewControllers: [UIViewController] = [] {
        didSet { viewControllers.forEach { $0.navigationController = self } }
    }

    open var topViewController: UIViewController? { viewControllers.last }

    public init(rootViewController: UIViewController) {
        super.init(nibName: nil, bundle: nil)
        viewControllers = [rootViewController]
    }

    public override init(nibName nibNameOrNil: String?, bundle nibBundleOrNil: Bundle?) {
        super.init(nibName: nibNameOrNil, bundle: nibBundleOrNil)
    }

    public required init?(coder: NSCoder) {
        return nil
    }

    open func pushViewController(_ viewController: UIViewController, animated: Bool) {
        viewControllers.append(viewController)
    }

    @discardableResult
    open func popViewController(animated: Bool) -> UIViewController? {
        viewControllers.count > 1 ? viewControllers.removeLast() : nil
    }

    open func setViewControllers(_ viewControllers: [UIViewController], animated: Bool) {
        self.viewControllers = viewControllers
    }

    override var children: [UIViewController] { viewControllers }
}

/// `UIColor`: the components the app gave (sRGB, 0...1).
public final class UIColor: NSObject, Sendable {
    public let red: CGFloat, green: CGFloat, blue: CGFloat, alpha: CGFloat

    public init(red: CGFloat, green: CGFloat, blue: CGFloat, alpha: CGFloat) {
        (self.red, self.green, self.blue, self.alpha) = (red, green, blue, alpha)
    }

    public convenience init(white: CGFloat, alpha: CGFloat) { self.init(red: white, green: white, blue: white, alpha: alpha) }

    /// A colour of an asset catalog: there are none here (no asset catalogs are bundled), so nil.
    public convenience init?(named name: String) { return nil }

    public func withAlphaComponent(_ alpha: CGFloat) -> UIColor { UIColor(red: red, green: green, blue: blue, alpha: alpha) }

    public static let black = UIColor(white: 0, alpha: 1)
    public static let white = UIColor(white: 1, alpha: 1)
    public static let clear = UIColor(white: 0, alpha: 0)
    public static let gray = UIColor(white: 0.5, alpha: 1)
    public static let red = UIColor(red: 1, green: 0, blue: 0, alpha: 1)
    public static let green = UIColor(red: 0, green: 1, blue: 0, alpha: 1)
    public static let blue = UIColor(red: 0, green: 0, blue: 1, alpha: 1)
    public static let orange = UIColor(red: 1, green: 0.5, blue: 0, alpha: 1)
    /// The light appearance's value of each dynamic system colour (there is no dark mode here).
    public static let systemBackground = white
    public static let secondarySystemBackground = UIColor(red: 0.95, green: 0.95, blue: 0.97, alpha: 1)
    public static let label = black
    public static let secondaryLabel = UIColor(red: 0.24, green: 0.24, blue: 0.26, alpha: 0.6)
    public static let systemBlue = UIColor(red: 0, green: 0.48, blue: 1, alpha: 1)
    public static let systemRed = UIColor(red: 1, green: 0.23, blue: 0.19, alpha: 1)
    public static let systemGreen = UIColor(red: 0.2, green: 0.78, blue: 0.35, alpha: 1)
    public static let systemGray = UIColor(red: 0.56, green: 0.56, blue: 0.58, alpha: 1)
    public static let tintColor = systemBlue

    public override var description: String { "UIColor(red: \(red), green: \(green), blue: \(blue), alpha: \(alpha))" }
}

/// `UIScreen`: one fixed, headless screen, the size of an iPhone's in points (390 × 844 at
/// scale 3), so that code sizing windows and views from it gets ordinary numbers.
public final class UIScreen: Sendable {
    public static let main = UIScreen()

    public let bounds = CGRect(x: 0, y: 0, width: 390, height: 844)
    public let scale: CGFloat = 3
    public var nativeBounds: CGRect { CGRect(x: 0, y: 0, width: bounds.width * scale, height: bounds.height * scale) }
    public var nativeScale: CGFloat { scale }
}
