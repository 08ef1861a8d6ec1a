import ArgumentParser
import AppHostRuntime
import Foundation

struct Reports: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List termination reports, show one, or draw a run's timeline.",
        discussion: """
            Every app process that ends writes a JSON report into the state directory's reports/. Without \
            --last, one line per report (oldest first): time, app, pid, namespace and code, kind, file, reason. \
            With --last, the newest in full: why it ended, what it held, its usage and last events. A report's \
            file name or path in place of APP shows that one. --json prints reports as they are stored (a \
            listing: one report per line). --timeline draws the instance's latest host run (or an earlier \
            one with --run 2…; the last \(EventJournal.keptRuns) are kept) as one lane of states per app.
            """)

    @OptionGroup var state: StateOptions

    @Argument(help: "Only this app's (a CFBundleName, bundle identifier or the last part of one); or a report's file name or path.")
    var app: String?

    @Flag(help: "Show the newest report in full.")
    var last = false

    @Flag(help: "Print the reports as JSON.")
    var json = false

    @Flag(help: "Draw a host run as a swim lane per app.")
    var timeline = false

    @Option(name: .customLong("run"), help: ArgumentHelp("With --timeline: which run; 1 is the latest, 2 the one before.", valueName: "n"))
    var runNumber = 1

    @Option(help: ArgumentHelp("With --timeline: columns of time (default: the terminal's width).", valueName: "columns"))
    var width: Int?

    func validate() throws {
        if timeline {
            guard !json, !last else { throw ValidationError("--timeline draws a run; it does not go with --json or --last") }
            if let width, !(10...1000).contains(width) { throw ValidationError("--width takes 10 to 1000 columns; not \(width)") }
        } else if width != nil || runNumber != 1 {
            throw ValidationError("--run and --width go with --timeline")
        }
    }

    func run() throws {
        if timeline { return drawTimeline() }
        let store = ReportStore(stateDirectory: state.stateDirectory)
        if let app, app.hasSuffix(".json") || app.contains("/") {
            let url = app.contains("/") ? URL(fileURLWithPath: app) : store.directory.appendingPathComponent(app)
            return show(url, store: store)
        }
        let wanted = app == "last" ? nil : app
        let reports = store.list().compactMap { url in (try? store.read(url)).map { (url, $0) } }
            .filter { wanted == nil || $0.1.matches(wanted!) }
        if last || app == "last" {
            guard let (url, _) = reports.last else { fail("no reports\(wanted.map { " of \($0)" } ?? "") in \(store.directory.path)") }
            return show(url, store: store)
        }
        if json {
            for (_, report) in reports { print(String(decoding: (try? report.encoded(pretty: false)) ?? Data(), as: UTF8.self)) }
        } else if reports.isEmpty {
            print("no reports\(wanted.map { " of \($0)" } ?? "") in \(store.directory.path)")
        } else {
            tableLines(reports.map { $0.1.listingFields + [$0.0.lastPathComponent, $0.1.reason] }).forEach { print(TerminalText.escaping($0)) }
        }
    }

    private func show(_ url: URL, store: ReportStore) {
        guard let data = FileManager.default.contents(atPath: url.path) else { fail("no report \(url.path)") }
        if json { return print(String(decoding: data, as: UTF8.self)) }
        do {
            try store.read(url).summaryLines(file: url.path).forEach { print($0) }
        } catch {
            fail("\(url.path) is not a report: \(error)")
        }
    }

    private func drawTimeline() {
        let runs = EventJournal.runs(stateDirectory: state.stateDirectory)
        guard runNumber >= 1, runNumber <= runs.count else {
            fail(runs.isEmpty
                ? "no host run recorded in \(EventJournal.directory(state.stateDirectory).path)"
                : "--run takes 1 to \(runs.count): \(runs.count) run\(runs.count == 1 ? " is" : "s are") kept")
        }
        let file = runs[runs.count - runNumber]
        do {
            let events = try EventJournal.events(in: file)
            let columns = width ?? min(1000, max(10, (ProcessInfo.processInfo.environment["COLUMNS"].flatMap(Int.init) ?? 100) - 20))
            print("run \(file.lastPathComponent)")
            SwimLanes.render(events, width: columns, app: app).forEach { print($0) }
        } catch {
            fail("cannot read \(file.path): \(error)")
        }
    }
}

extension TerminationReport {
    /// Whether `app` names this report's app: its identifier, CFBundleName, or an identifier's
    /// last part, in any case.
    func matches(_ app: String) -> Bool {
        let wanted = app.lowercased()
        let identifier = self.app.lowercased()
        return identifier == wanted || name.lowercased() == wanted || identifier.hasSuffix("." + wanted)
    }
}
