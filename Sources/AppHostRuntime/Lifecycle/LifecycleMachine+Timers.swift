// The machine's deadlines: which timers it keeps, and the fixed graces between its kills.
extension LifecycleMachine {
    enum Timer: Hashable {
        case launch
        case callback
        case backgroundWarning
        case backgroundEnd
        case interruption
        /// A piece of background work's budget, or the grace after its expiration.
        case work(UInt64)
        /// The freeze began; every thread must be verified stopped by then.
        case suspendVerification
        /// The app closed its control socket; a dying process ends within this grace.
        case controlClosed
        /// The kill was sent; if the process has not ended by then, it is killed again.
        case killEscalation
        /// A watchdog asked for the main thread's backtrace; the kill follows by then at the latest.
        case mainThreadSample
        /// Expiration handlers began; they must all have returned by then.
        case expirationHandlers
        /// A continuous mode has held the app in the background for `continuousHoldLimit`.
        case continuousHold
        /// A call no VoIP push brought has lasted `unpushedCallLimit`.
        case unpushedCall(String)
    }

    /// How long a watchdog kill waits for the main thread's backtrace before it kills regardless.
    static let mainThreadSampleTimeout: Duration = .milliseconds(100)
    /// A forbidden system call is answered with SIGSYS, which the app cannot handle; SIGKILL
    /// follows if it is still alive this long after.
    static let signalEscalation: Duration = .milliseconds(100)
    /// After SIGKILL, how long until the host kills again (a thawed group, a re-sent signal).
    static let killRetry: Duration = .seconds(1)
    /// A dying process closes its socket just before it ends; one that lives on without it past
    /// this grace can no longer be driven.
    static let controlCloseGrace: Duration = .milliseconds(500)
}
