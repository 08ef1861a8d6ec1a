import Foundation

/// A directory of its own under the temporary directory for the files one test writes, removed
/// with it: a suite keeps one as a stored property, and swift-testing releases the suite's
/// instance after each test.
final class TemporaryFiles {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apphost-unit-\(UUID().uuidString)")

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// The path of `name` in the directory, which is made on first use.
    func url(_ name: String) throws -> URL {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory.appendingPathComponent(name)
    }

    /// A policy file with this text.
    func policy(_ text: String) throws -> URL {
        let url = try url("policy-\(UUID().uuidString).json")
        try Data(text.utf8).write(to: url)
        return url
    }
}
