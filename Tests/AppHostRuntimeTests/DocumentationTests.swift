import AppHostProtocol
@testable import AppHostRuntime
import Foundation
import Testing

/// The tables of docs/ held to the code, so that they cannot drift: every command the command
/// language accepts is in docs/commands.md and no row there names one that does not exist; every
/// event name the host can send is in docs/events.md, and no other, and so is every field of an
/// event's JSON line; and every relative link of README.md, docs/ and the DocC catalogs reaches a
/// file and a heading that exist. (The policy knobs' table is PolicyKnobTests'.)
@Suite struct DocumentationTests {
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private func read(_ path: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The first cell of each row of the table that follows `heading` (the first table of the
    /// page when nil), header and rule left out.
    private func firstCells(of page: String, after heading: String? = nil) -> [String] {
        var text = Substring(page)
        if let heading, let start = page.range(of: "\n" + heading + "\n") { text = page[start.upperBound...] }
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.hasPrefix("|") }
        return lines.prefix { $0.hasPrefix("|") }.dropFirst(2).map { row in
            // A cell's `\|` is a bar of its text, not the end of the cell.
            let cells = row.dropFirst().replacingOccurrences(of: "\\|", with: "\u{0}").split(separator: "|", maxSplits: 1)
            return String(cells.first ?? "").replacingOccurrences(of: "\u{0}", with: "|").trimmingCharacters(in: .whitespaces)
        }
    }

    /// The spans in backquotes of a cell: "`audio-interrupt APP`, `audio-resume APP`" has two.
    private func codeSpans(_ cell: String) -> [String] {
        cell.split(separator: "`", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) }
    }

    @Test func theCommandTableNamesEveryCommandAndNoOther() throws {
        let rows = firstCells(of: try read("docs/commands.md"))
        #expect(rows.count > 30)
        let documented = Set(rows.flatMap(codeSpans).compactMap { $0.split(separator: " ").first.map(String.init) })
        let accepted = Set(HostCommand.summaries.map { String($0.usage.prefix { $0 != " " }) })
        #expect(documented.subtracting(accepted).isEmpty, "docs/commands.md names commands help does not: \(documented.subtracting(accepted).sorted())")
        #expect(accepted.subtracting(documented).isEmpty, "docs/commands.md lacks commands: \(accepted.subtracting(documented).sorted())")
        for verb in documented {
            // The parser knows each verb: a bare verb parses, or fails on its arguments, never as unknown.
            do throws(CommandError) { _ = try HostCommand.parse(verb) } catch {
                #expect(!error.description.hasPrefix("unknown command"), "\(verb): \(error.description)")
            }
        }
    }

    /// Every event name in the code: `EventName`'s members and the names made in place (the
    /// listings' `event` fields), read from the sources, and the callbacks' names.
    private func eventNamesInTheCode() throws -> Set<String> {
        var names = Set(WireCallback.allCases.map(\.rawValue))
        let sources = Self.root.appendingPathComponent("Sources")
        let patterns = [#"EventName\(rawValue: "(\w+)"\)"#, #"encode\("(\w+)", forKey: \.event\)"#].map { try! NSRegularExpression(pattern: $0) }
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?.compactMap { $0 as? URL } ?? []
        for file in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for pattern in patterns {
                for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                    names.insert(String(text[Range(match.range(at: 1), in: text)!]))
                }
            }
        }
        return names
    }

    @Test func theEventTableNamesEveryEventAndNoOther() throws {
        let rows = firstCells(of: try read("docs/events.md"), after: "## Event names")
        let documented = rows.flatMap(codeSpans)
        #expect(documented.count == Set(documented).count, "an event listed twice")
        let inCode = try eventNamesInTheCode()
        #expect(inCode.isSuperset(of: [EventName.started.rawValue, EventName.terminated.rawValue, "transferListing", "didBecomeActive"]))
        #expect(Set(documented).subtracting(inCode).isEmpty, "docs/events.md names events the host does not send: \(Set(documented).subtracting(inCode).sorted())")
        #expect(inCode.subtracting(documented).isEmpty, "docs/events.md lacks events: \(inCode.subtracting(documented).sorted())")
    }

    /// Every field an event line can carry is in docs/events.md's JSON table: an event with
    /// every field set, encoded as `--json` encodes it.
    @Test func theJSONTableNamesEveryFieldOfAnEventLine() throws {
        let documented = Set(firstCells(of: try read("docs/events.md"), after: "## JSON").flatMap(codeSpans))
        var event = HostEvent(
            time: Date(), app: "com.example.notes", name: "Notes", pid: 42, event: .terminated, state: .terminated, detail: "crashed",
            elapsed: .milliseconds(3),
            termination: Termination(kind: .watchdog, namespace: .frontBoard, code: TerminationCode.watchdog.rawValue, reason: "hung"),
            report: "/reports/Notes.json",
            host: HostSummary(
                launcher: "template", suspension: "SIGSTOP", sandbox: "seccomp", memory: "sampling", storage: "accounting",
                instance: "default", stateDirectory: "/state", schedulerClock: "2026-01-01T00:00:00.000Z", capacity: 10,
                capacityBoundBy: "RLIMIT_NOFILE"),
            level: .info, label: "notes")
        event.fatalError = "Fatal error"
        event.backtrace = ["0 Notes"]
        event.appFrame = "Notes.AppDelegate.save() + 36"
        let object = try #require(try JSONSerialization.jsonObject(with: Data(event.jsonLine.utf8)) as? [String: Any])
        #expect(object.count > 25)
        let missing = Set(object.keys).subtracting(documented)
        #expect(missing.isEmpty, "docs/events.md's JSON table lacks \(missing.sorted())")
    }

    /// A heading's anchor as GitHub makes it: lower case, punctuation but `-` and `_` dropped,
    /// spaces as `-`.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) || "-_ ".unicodeScalars.contains($0) })
            .replacingOccurrences(of: " ", with: "-")
    }

    /// The text outside fenced code blocks.
    private func prose(_ text: String) -> String {
        text.components(separatedBy: "\n```").enumerated().filter { $0.offset % 2 == 0 }.map(\.element).joined(separator: "\n")
    }

    private func anchors(_ text: String) -> Set<String> {
        Set(prose(text).split(separator: "\n").filter { $0.hasPrefix("#") }.map { Self.anchor($0.drop { $0 == "#" }.trimmingCharacters(in: .whitespaces)) })
    }

    @Test func everyRelativeLinkReachesAFileAndAHeading() throws {
        let manager = FileManager.default
        var pages = ["README.md"]
        for directory in ["docs", "Sources/AppHostKit/AppHostKit.docc", "Sources/AppHostTesting/AppHostTesting.docc"] {
            pages += try manager.contentsOfDirectory(atPath: Self.root.appendingPathComponent(directory).path)
                .filter { $0.hasSuffix(".md") }.map { "\(directory)/\($0)" }
        }
        #expect(pages.count > 20)
        let link = try NSRegularExpression(pattern: #"\]\(([^)\s]+)\)"#)
        var checked = 0
        for page in pages {
            let text = prose(try read(page))
            let base = Self.root.appendingPathComponent(page).deletingLastPathComponent()
            for match in link.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
                let target = String(text[Range(match.range(at: 1), in: text)!])
                guard !target.contains(":") else { continue }  // https:, doc:
                let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = parts[0].isEmpty ? Self.root.appendingPathComponent(page) : base.appendingPathComponent(String(parts[0])).standardizedFileURL
                #expect(manager.fileExists(atPath: file.path), "\(page): \(target) is not a file")
                if parts.count == 2, file.pathExtension == "md", manager.fileExists(atPath: file.path) {
                    let headings = anchors(try String(contentsOf: file, encoding: .utf8))
                    #expect(headings.contains(String(parts[1])), "\(page): \(target) names no heading of \(file.lastPathComponent)")
                }
                checked += 1
            }
        }
        #expect(checked > 100)
    }
}
