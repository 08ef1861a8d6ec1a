import AppHostRuntime
import Foundation
import Testing

/// `Policy.knobs` drives the policy file, the command line and docs/policy.md; these hold each to it.
@Suite struct PolicyKnobTests {
    private let files = TemporaryFiles()

    private func write(_ text: String) throws -> URL { try files.policy(text) }

    /// A valid value other than the default for a knob: as JSON, as command-line words, and the
    /// policy it should make.
    private func sample(_ knob: PolicyKnob) -> (json: String, words: [String], expected: Policy) {
        var expected = Policy()
        switch knob.kind {
        case .seconds(let path):
            let value = expected[keyPath: path].seconds + 1.5
            expected[keyPath: path] = .seconds(double: value)
            return ("\(value)", ["\(value)"], expected)
        case .count(let path):
            let value = expected[keyPath: path] + 7
            expected[keyPath: path] = value
            return ("\(value)", ["\(value)"], expected)
        case .optionalCount(let path):
            expected[keyPath: path] = 7
            return ("7", ["7"], expected)
        case .optionalSeconds(let path):
            expected[keyPath: path] = .seconds(double: 2.5)
            return ("2.5", ["2.5"], expected)
        case .mebibytes(let path):
            // Half the default: a background limit stays under the foreground one.
            let value = Double(expected[keyPath: path]) / 2 / 1_048_576
            expected[keyPath: path] = UInt64(value * 1_048_576)
            return ("\(value)", ["\(value)"], expected)
        case .optionalMebibytes(let path):
            expected[keyPath: path] = 537_395_200
            return ("512.5", ["512.5"], expected)
        case .percentOfCore(let path):
            expected[keyPath: path] = 42.5
            return ("42.5", ["42.5"], expected)
        case .toggle(let path):
            let value = !expected[keyPath: path]
            expected[keyPath: path] = value
            return ("\(value)", ["\(value)"], expected)
        case .capabilityNames(let path):
            expected[keyPath: path] = ["CAP_NET_BIND_SERVICE", "CAP_NET_RAW"]
            return (#"["CAP_NET_BIND_SERVICE", "CAP_NET_RAW"]"#, ["CAP_NET_BIND_SERVICE", "CAP_NET_RAW"], expected)
        case .absolutePaths(let path):
            expected[keyPath: path] = ["/dev/video0", "/run/db.sock"]
            return (#"["/dev/video0", "/run/db.sock"]"#, ["/dev/video0", "/run/db.sock"], expected)
        case .userRange(let path):
            expected[keyPath: path] = 3_000_000...3_000_999
            return (#""3000000-3000999""#, ["3000000-3000999"], expected)
        }
    }

    @Test(arguments: Policy.knobs.map(\.key))
    func eachFileKeyRoundTripsThroughLoad(key: String) throws {
        let knob = Policy.knob(key)
        let (json, _, expected) = sample(knob)
        #expect(expected != Policy(), "the sample of \(key) differs from its default")
        #expect(try Policy.load(contentsOf: try write(#"{"\#(key)": \#(json)}"#)) == expected)
    }

    @Test(arguments: Policy.knobs.map(\.key))
    func eachFlagSetsWhatItsKeySets(key: String) throws {
        let (_, words, expected) = sample(Policy.knob(key))
        #expect(try Policy().applying(commandLine: [(key, words)]) == expected)
    }

    @Test(arguments: Policy.knobs.map(\.key))
    func aWrongValueNamesTheFileTheKeyAndWhatItWants(key: String) throws {
        let knob = Policy.knob(key)
        let url = try write(#"{"\#(key)": "nonsense"}"#)
        #expect { try Policy.load(contentsOf: url) } throws: { error in
            "\(error)" == "\(url.path): \(key) must be \(knob.kind.expectation)"
        }
    }

    @Test func aWrongFlagNamesTheFlagAndWhatItWants() {
        #expect { try Policy().applying(commandLine: [("backgroundTime", ["0"])]) } throws: { error in
            "\(error)" == "--background-time must be a positive number of seconds"
        }
        #expect { try Policy().applying(commandLine: [("appUserRange", ["9-1"])]) } throws: { error in
            "\(error)".hasPrefix("--app-user-range must be a range FIRST-LAST")
        }
        #expect { try Policy().applying(commandLine: [("maximumViolations", ["2.5"])]) } throws: { error in
            "\(error)" == "--maximum-violations must be a positive whole number"
        }
    }

    @Test func repeatedFlagsAddToTheFilesLists() throws {
        var base = Policy()
        base.sharedResources = ["/dev/video0"]
        let policy = try base.applying(commandLine: [("sharedResources", ["/run/./db.sock"]), ("perAppUsers", [])])
        #expect(policy.sharedResources == ["/dev/video0", "/run/db.sock"])
        #expect(policy.perAppUsers, "a knob given no words keeps its value")
    }

    @Test func aForegroundLimitBelowTheBackgroundOneLowersItUnlessBothAreGiven() throws {
        #expect(try Policy().applying(commandLine: [("foregroundMemoryLimit", ["100"])]).backgroundMemoryLimit == 100 << 20)
        #expect {
            try Policy().applying(commandLine: [("foregroundMemoryLimit", ["100"]), ("backgroundMemoryLimit", ["200"])])
        } throws: { error in
            "\(error)" == "backgroundMemoryLimit (200.0 MiB) must not exceed foregroundMemoryLimit (100.0 MiB)"
        }
    }

    @Test func theNewSuspendTimeoutIsAKnob() throws {
        #expect(Policy().suspendTimeout == .seconds(2))
        let knob = Policy.knob("suspendTimeout")
        #expect(knob.flag == "suspend-timeout")
        #expect(knob.flagHelp.hasSuffix("(the freeze could not be verified) (default: 2 s)."))
    }

    @Test func keysAndFlagsAreUniqueAndFlagsAreSpelledFromKeys() {
        #expect(Set(Policy.knobs.map(\.key)).count == Policy.knobs.count)
        #expect(Set(Policy.knobs.map(\.flag)).count == Policy.knobs.count)
        for knob in Policy.knobs {
            #expect(!knob.flag.hasPrefix("-") && !knob.flag.contains(where: \.isUppercase), "\(knob.key): --\(knob.flag)")
            #expect(knob.help.first?.isLetter == true && !knob.help.hasSuffix("."), "\(knob.key): one line, no full stop")
        }
    }

    /// docs/policy.md's first section (up to "Resource rules"), from the package root.
    private func policyPage() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let page = try String(contentsOf: root.appendingPathComponent("docs/policy.md"), encoding: .utf8)
        return page.components(separatedBy: "\n## ").first ?? ""
    }

    @Test func thePolicyPageListsEveryKnob() throws {
        let section = try policyPage()
        for knob in Policy.knobs {
            #expect(section.contains("`\(knob.key)`"), "docs/policy.md lists \(knob.key)")
            #expect(section.contains("`--\(knob.flag)"), "docs/policy.md lists --\(knob.flag)")
        }
        let table = section.split(separator: "\n").filter { $0.hasPrefix("|") }.joined(separator: "\n")
        #expect(table == Policy.markdownTable, "docs/policy.md's table differs from Policy.knobs; it should read:\n\(Policy.markdownTable)")
    }
}
