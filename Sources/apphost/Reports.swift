import ArgumentParser
import AppHostRuntime
import Foundation

struct Reports: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List termination reports, or show one.",
        discussion: "Every app process that ends writes a JSON report into the state directory's reports/.")

    @OptionGroup var state: StateOptions

    @Argument(help: "A report to show: its file name, a path, or `last`.")
    var report: String?

    func run() throws {
        let store = ReportStore(stateDirectory: state.stateDirectory)
        let files = store.list()
        guard let report else {
            if files.isEmpty { print("no reports in \(store.directory.path)") }
            for file in files {
                guard let data = try? Data(contentsOf: file),
                      let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
                else { continue }
                let fields = ["time", "name", "pid", "namespace", "code", "reason"].map { object[$0].map { "\($0)" } ?? "-" }
                print(fields.joined(separator: "  ") + "  " + file.lastPathComponent)
            }
            return
        }
        let url: URL
        if report == "last" {
            guard let last = files.last else { fail("no reports in \(store.directory.path)") }
            url = last
        } else if report.contains("/") {
            url = URL(fileURLWithPath: report)
        } else {
            url = store.directory.appendingPathComponent(report)
        }
        guard let data = FileManager.default.contents(atPath: url.path) else { fail("no report \(url.path)") }
        print(String(decoding: data, as: UTF8.self))
    }
}
