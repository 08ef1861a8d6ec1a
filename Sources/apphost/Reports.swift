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
                guard let contents = try? store.read(file) else { continue }
                let fields = [
                    HostEvent.isoFormatter.string(from: contents.time), contents.name, String(contents.pid), contents.namespace,
                    contents.code ?? "-", contents.reason,
                ]
                print(TerminalText.escaping(fields.joined(separator: "  ") + "  " + file.lastPathComponent))
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
