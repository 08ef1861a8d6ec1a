import ArgumentParser
import AppHostRuntime

struct Doctor: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Report what this kernel and user give apphost, and which mechanisms it will use.")

    @OptionGroup var state: StateOptions

    func run() {
        var report = DoctorReport.probe()
        report.probeStorage(stateDirectory: state.stateDirectory)
        for finding in report.findings {
            print("\(finding.available ? "yes" : "no ")  \(finding.name): \(finding.detail)")
        }
        print(report.launcher)
        print(report.suspension)
        print(report.sandbox)
        print(report.memory)
        print(report.storage)
        for guarantee in report.guarantees { print(guarantee) }
    }
}
