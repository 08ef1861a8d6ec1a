/// How the host starts an app process (docs/launching.md, "How apps are launched").
public enum Launcher: String, Sendable, CaseIterable {
    /// Exec'd ahead of its launch, with no app chosen yet (a standby): each app process has its
    /// own address-space layout and seeds, and a launch that takes one starts no process. The
    /// next is made once the launch has settled; a launch that finds none is exec'd.
    case standby
    /// Forked from the host's template process, which has loaded the Swift runtime, Foundation
    /// and Dispatch once and never runs app code; its standbys are forks too. Children share its
    /// address-space layout: one app's leak of an address gives every app's.
    case template
    /// A fresh exec of the apphost binary per app: a new address-space layout each time.
    case exec
}
