@testable import AppHostRuntime
import Testing

/// The `process` line of a report's summary (`apphost reports APP --last`): how the process
/// ended, and whether the host decided it.
@Suite struct ReportSummaryTests {
    /// A 0x2182bad2 report said "process exited with status 0; ended by the host": the SDK
    /// exits 0 when the host closes its connection to end it, and the line read as if the app
    /// had quit by itself.
    @Test func anAppTheHostEndedThatExitedAsItsConnectionClosedSaysWhy() {
        #expect(TerminationReport.processLine(signal: nil, exitStatus: 0, crash: false)
            == "ended by the host: it exited (status 0) as the host closed its connection to end it")
        #expect(TerminationReport.processLine(signal: "SIGKILL", exitStatus: nil, crash: false) == "killed by SIGKILL; ended by the host")
        #expect(TerminationReport.processLine(signal: nil, exitStatus: 78, crash: false) == "ended by the host; it exited with status 78")
    }

    @Test func aCrashSaysTheHostDidNotDecideIt() {
        #expect(TerminationReport.processLine(signal: "SIGILL", exitStatus: nil, crash: true)
            == "killed by SIGILL; a crash: the app ended without the host deciding it")
        #expect(TerminationReport.processLine(signal: nil, exitStatus: 3, crash: true)
            == "exited with status 3; a crash: the app ended without the host deciding it")
    }
}
