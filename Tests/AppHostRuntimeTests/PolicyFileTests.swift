import AppHostRuntime
import Foundation
import Testing

/// Policy files as users write them: README's own example, integers where seconds are expected,
/// strict Booleans, strict JSON, and a nearby key for a typo.
@Suite struct PolicyFileTests {
    private let files = TemporaryFiles()

    private func write(_ text: String) throws -> URL { try files.policy(text) }

    private func message(_ text: String) throws -> String? {
        let url = try write(text)
        do {
            _ = try Policy.load(contentsOf: url)
            return nil
        } catch {
            return "\(error)".replacingOccurrences(of: url.path + ": ", with: "")
        }
    }

    /// AppHostTesting hands a test's policy to its host as a file: what it writes must read back
    /// as the same policy, every knob included.
    @Test func aWrittenPolicyReadsBackAsItself() throws {
        var policy = Policy()
        #expect(try Policy.load(contentsOf: try write(String(decoding: policy.fileContents(), as: UTF8.self))) == policy)
        policy.backgroundTime = .seconds(2)
        policy.expirationWarning = .milliseconds(500)
        policy.maximumViolations = 3
        policy.memoryBudget = 300 << 20
        policy.foregroundMemoryLimit = 96 << 20
        policy.backgroundMemoryLimit = 64 << 20
        policy.perAppUsers = false
        policy.appUserRange = 3_000_000...3_000_999
        policy.allowedCapabilities = ["CAP_NET_BIND_SERVICE"]
        policy.sharedResources = ["/dev/null"]
        policy.backgroundCPULimit = 12.5
        let text = String(decoding: policy.fileContents(), as: UTF8.self)
        #expect(try Policy.load(contentsOf: try write(text)) == policy)
        #expect(text.contains(#""backgroundTime" : 2"#))
    }

    @Test func readmesExampleLoads() throws {
        let policy = try Policy.load(contentsOf: try write(#"{ "backgroundTime": 10, "expirationWarning": 2, "didEnterBackgroundTimeout": 1 }"#))
        #expect(policy.backgroundTime == .seconds(10))
        #expect(policy.expirationWarning == .seconds(2))
        #expect(policy.didEnterBackgroundTimeout == .seconds(1))
    }

    @Test func wholeAndDecimalSecondsAndCountsLoad() throws {
        #expect(try Policy.load(contentsOf: try write(#"{"didEnterBackgroundTimeout": 1.0}"#)).didEnterBackgroundTimeout == .seconds(1))
        #expect(try Policy.load(contentsOf: try write(#"{"didEnterBackgroundTimeout": 0.5}"#)).didEnterBackgroundTimeout == .milliseconds(500))
        #expect(try Policy.load(contentsOf: try write(#"{"maximumViolations": 1}"#)).maximumViolations == 1)
        #expect(try Policy.load(contentsOf: try write(#"{"openFileLimit": 1}"#)).openFileLimit == 1)
        #expect(try Policy.load(contentsOf: try write(#"{"backgroundCPULimit": 1}"#)).backgroundCPULimit == 1)
    }

    @Test func aBoolKeyTakesOnlyTrueOrFalse() throws {
        #expect(try message(#"{"perAppUsers": 1}"#) == "perAppUsers must be true or false")
        #expect(try message(#"{"perAppUsers": 0}"#) == "perAppUsers must be true or false")
        #expect(try message(#"{"perAppUsers": "true"}"#) == "perAppUsers must be true or false")
        #expect(try Policy.load(contentsOf: try write(#"{"perAppUsers": false}"#)).perAppUsers == false)
    }

    @Test func aNumberKeyRefusesBooleansAndFractionsOfACount() throws {
        #expect(try message(#"{"backgroundTime": true}"#) == "backgroundTime must be a positive number of seconds")
        #expect(try message(#"{"maximumViolations": 2.5}"#) == "maximumViolations must be a positive whole number")
        #expect(try message(#"{"maximumViolations": 0}"#) == "maximumViolations must be a positive whole number")
        #expect(try message(#"{"allowedCapabilities": [1]}"#) == "allowedCapabilities must be \(Policy.knob("allowedCapabilities").kind.expectation)")
    }

    @Test func malformedJSONIsOneLine() throws {
        let trailingComma = try #require(try message(#"{"backgroundTime": 10,}"#))
        #expect(trailingComma.hasPrefix("not a JSON object ("), "\(trailingComma)")
        #expect(!trailingComma.contains("\n"))
        #expect(try message(#"{"sharedResources": ["/dev/null",]}"#)?.hasPrefix("not a JSON object (") == true)
        #expect(try Policy.load(contentsOf: try write(#"{"sharedResources": ["/a,]"]}"#)).sharedResources == ["/a,]"], "a comma in a string is no trailing comma")
        let array = try #require(try message(#"[1, 2]"#))
        #expect(array.hasPrefix("not a JSON object ("), "\(array)")
    }

    @Test func anUnknownKeySuggestsTheNearest() throws {
        #expect(try message(#"{"backgroundTim": 3}"#) == "unknown key backgroundTim; did you mean backgroundTime?")
        #expect(try message(#"{"perappusers": true}"#) == "unknown key perappusers; did you mean perAppUsers?")
        let far = try #require(try message(#"{"colour": 3}"#))
        #expect(far.hasPrefix("unknown key colour; known keys: allowedCapabilities, appGroupStorageLimit, "))
    }

    @Test func nearestNameIsATypoAwayOrNothing() {
        #expect(NearestName.suggestion(for: "lanch", among: ["launch", "doctor", "reports"]) == "launch")
        #expect(NearestName.suggestion(for: "xyz", among: ["launch", "doctor", "reports"]) == nil)
        #expect(NearestName.suggestion(for: "hom", among: ["home", "open"]) == "home")
    }
}
