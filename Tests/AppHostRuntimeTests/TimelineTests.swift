import AppHostRuntime
import Foundation
import Testing

/// The run as spans (Timeline), as swim lanes, and the exit status a run's ends call for, from
/// events made by hand at exact times.
@Suite struct TimelineTests {
    private let origin = Date(timeIntervalSince1970: 1_800_000_000)

    private func event(
        _ at: Double, _ name: String, _ state: AppState? = nil, app: String = "com.example.notes", elapsed: Double? = nil,
        detail: String? = nil, termination: Termination? = nil
    ) -> HostEvent {
        HostEvent(
            time: origin.addingTimeInterval(at), app: app, name: app.split(separator: ".").last.map { $0.capitalized }, pid: 42,
            event: EventName(rawValue: name), state: state, detail: detail, elapsed: elapsed.map { .seconds(double: $0) },
            termination: termination)
    }

    private var watchdog: Termination {
        Termination(kind: .watchdog, namespace: .frontBoard, code: TerminationCode.watchdog.rawValue, reason: "did not return")
    }

    private var run: [HostEvent] {
        [
            HostEvent(time: origin, event: .started, detail: "host"),
            event(0, "launching", .launching),
            event(1, "didBecomeActive", .active, elapsed: 0.5),
            event(2, "backgroundTaskBegan", .active, detail: "#1 \"sync\""),
            event(4, "didEnterBackground", .background, elapsed: 0.25),
            event(5, "backgroundTaskEnded", .background, detail: "#1 \"sync\""),
            event(6, "suspended", .suspended, elapsed: 0.001),
            event(1, "launching", .launching, app: "com.example.weather"),
            event(9, "terminated", .active, app: "com.example.weather", termination: watchdog),
            event(10, "terminated", .suspended, termination: Termination(kind: .hostShutdown, namespace: .host, code: nil, reason: "shut down")),
        ]
    }

    @Test func spansRunFromTheEventThatEnteredAStateToTheNext() {
        var timeline = Timeline()
        let items = run.flatMap { timeline.add($0) } + timeline.finish(at: origin.addingTimeInterval(10))
        let notes = items.filter { $0.app == "com.example.notes" }
        let states = notes.compactMap { item -> String? in
            guard case .state(let state) = item.kind, let end = item.end else { return nil }
            return "\(state.rawValue) \(item.start.timeIntervalSince(origin))-\(end.timeIntervalSince(origin))"
        }
        #expect(states == ["launching 0.0-1.0", "active 1.0-4.0", "background 4.0-6.0", "suspended 6.0-10.0"])
        let callback = notes.first { $0.kind == .callback(.didEnterBackground) }
        #expect(callback?.start == origin.addingTimeInterval(3.75) && callback?.end == origin.addingTimeInterval(4))
        let task = notes.first { $0.kind == .backgroundTask("#1 \"sync\"") }
        #expect(task?.start == origin.addingTimeInterval(2) && task?.end == origin.addingTimeInterval(5))
        #expect(notes.contains { $0.kind == .freeze })
        let end = items.first { $0.app == "com.example.weather" && $0.kind == .moment(.terminated) }
        #expect(end?.termination == watchdog)
    }

    @Test func lanesShowTheLongestStateOfEachColumnAndHowEachAppEnded() {
        let lines = SwimLanes.render(run, width: 20)
        #expect(lines[0] == "2027-01-15T08:00:00.000Z to +10 s, 0.500 s per column")
        #expect(lines[1] == "         0 s         6 s")
        #expect(lines.contains("Notes    LLAAAAAAbbbbsssssss|"))
        #expect(lines.contains("Weather    LLLLLLLLLLLLLLLLx"))
        #expect(lines.suffix(2) == ["Weather at +9 s: FRONTBOARD 0x8badf00d (watchdog), did not return", "Notes at +10 s: HOST (host-shutdown), shut down"])
        #expect(SwimLanes.render(run, width: 20, app: "weather").contains { $0.hasPrefix("Notes") } == false)
        #expect(SwimLanes.render(run, app: "Mail") == ["no events of Mail in this run"])
        #expect(SwimLanes.render([]) == ["no events"])
    }

    /// After a system kill the host still says things of the app (its report, in state
    /// terminated): its lane filled with `????` to the host's end, a letter the legend lacks.
    @Test func anEndedAppsLaneIsEmptyAfterItsEndAndEveryLetterIsInTheLegend() {
        let killed = [
            event(0, "launching", .launching, app: "com.example.weather"),
            event(1, "didBecomeActive", .active, app: "com.example.weather"),
            event(4, "terminated", .terminated, app: "com.example.weather", termination: watchdog),
            event(4.5, "report", .terminated, app: "com.example.weather", detail: "written"),
            event(0, "launching", .launching),
            event(10, "didBecomeActive", .active),
        ]
        let lines = SwimLanes.render(killed, width: 20)
        #expect(lines.contains("Weather  LLAAAAAAx"))
        let lanes = lines.filter { $0.hasPrefix("Weather  ") || $0.hasPrefix("Notes    ") }
        let letters = Set(lanes.flatMap { $0.dropFirst(9) }).subtracting([" "])
        let legend = Set(SwimLanes.legend.split(separator: "  ").compactMap(\.first))
        #expect(letters.isSubset(of: legend), "\(letters.subtracting(legend)) missing from the legend")
    }

    @Test func onlyEndsTheSystemImposedFailTheRun() {
        func status(_ namespace: TerminationNamespace, _ kind: Termination.Kind) -> HostExitStatus? {
            HostExitStatus(Termination(kind: kind, namespace: namespace, code: nil, reason: ""))
        }
        #expect(status(.user, .userTerminated) == nil)
        #expect(status(.user, .forceQuit) == nil)
        #expect(status(.host, .hostShutdown) == nil)
        #expect(status(.host, .launchFailed) == .badInput)
        #expect(status(.signal, .crash) == .crash)
        #expect(status(.exit, .exit) == .crash)
        #expect(status(.frontBoard, .watchdog) == .watchdog)
        #expect(status(.runningBoard, .sharedResource) == .backgroundRules)
        #expect(status(.runningBoard, .storagePressure) == .backgroundRules)
        #expect(status(.sandbox, .forbiddenSyscall) == .sandbox)
        #expect(status(.jetsam, .pageShortage) == .jetsam)
        #expect(status(.resource, .cpuResource) == .resource)
        #expect(status(.host, .protocolViolation) == .hostRules)
        #expect(status(.host, .suspensionFailed) == .hostRules)
    }

    @Test func theReadmesExitStatusTableListsEveryStatus() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n## Exit status").dropFirst().first?.components(separatedBy: "\n## ").first)
        let statuses = section.split(separator: "\n").filter { $0.hasPrefix("| ") }.compactMap { Int32($0.split(separator: "|").first?.trimmingCharacters(in: .whitespaces) ?? "") }
        #expect(statuses == HostExitStatus.allCases.map(\.rawValue) + [64])
    }
}
