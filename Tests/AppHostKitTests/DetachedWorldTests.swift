#if canImport(Glibc)
import Glibc
#endif
import AppHostKit
import Foundation
import Testing

/// A delegate that does what app code does with its world: writes a file in Documents, found
/// through Foundation, and reads a value of its Info.plist through `Bundle.main`.
@MainActor
final class WorldDelegate: ApplicationDelegate {
    var savedAt: URL?
    var serverURL: String?

    init() {}

    func application(_ application: Application, didFinishLaunchingWithOptions launchOptions: [Application.LaunchOptionsKey: Any]?) -> Bool {
        // As iOS code writes it: a force-unwrapped value crashed the whole test process when
        // Bundle.main was the test runner's.
        serverURL = (Bundle.main.object(forInfoDictionaryKey: "ServerURL") as! String)
        let documents = FileManager.default.urls(for: .documentDirectory, in: .userDomainMask)[0]
        savedAt = documents.appendingPathComponent("notes.json")
        try? Data("[]".utf8).write(to: savedAt!)
        return true
    }
}

/// Issue 41: `DetachedApplication` used the test runner's world. Each test is synchronous on the
/// main actor, where every detached application is made and released: no other test's
/// application can come between making one and asking.
@MainActor
@Suite struct DetachedWorldTests {
    let info: [String: Any] = ["CFBundleIdentifier": "com.example.world", "CFBundleName": "World", "ServerURL": "https://example.com/api"]

    /// The real home directory, whatever HOME says.
    private var realHome: String { getpwuid(getuid()).map { String(cString: $0.pointee.pw_dir) } ?? "/nonexistent" }

    @Test func documentsWritesGoToTheTemporaryContainerNeverTheRealDocuments() throws {
        let app = DetachedApplication(delegate: WorldDelegate(), infoDictionary: info)
        #expect(app.launch())
        let saved = try #require(app.delegate.savedAt).standardizedFileURL
        let container = app.application.containerURL.standardizedFileURL
        #expect(saved.path == container.path + "/Documents/notes.json")
        #expect(FileManager.default.fileExists(atPath: saved.path))
        #expect(container.path.hasPrefix(FileManager.default.temporaryDirectory.standardizedFileURL.path))
        #expect(!container.path.hasPrefix(realHome + "/"))
        #expect(NSHomeDirectory() == container.path)
        #expect(FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first?.path == container.path + "/Library/Caches")
    }

    @Test func eachApplicationHasAContainerOfItsOwn() {
        let first = DetachedApplication(delegate: WorldDelegate(), infoDictionary: info)
        let second = DetachedApplication(delegate: WorldDelegate(), infoDictionary: info)
        #expect(first.application.containerURL != second.application.containerURL)
    }

    @Test func bundleMainAnswersWithTheAppsInfoPlist() {
        let app = DetachedApplication(delegate: WorldDelegate(), infoDictionary: info)
        #expect(app.launch())
        #expect(app.delegate.serverURL == "https://example.com/api")
        #expect(Bundle.main.bundleIdentifier == "com.example.world")
        #expect(Bundle.main.infoDictionary?["CFBundleName"] as? String == "World")
    }

    /// Released, an application gives the world back to what had it before: the test
    /// process's own, or a detached application still alive.
    @Test func aReleasedApplicationGivesTheWorldBack() {
        let home = getenv("CFFIXED_USER_HOME").map { String(cString: $0) }
        let identifier = Bundle.main.bundleIdentifier
        do {
            let app = DetachedApplication(delegate: WorldDelegate(), infoDictionary: info)
            #expect(Bundle.main.bundleIdentifier == "com.example.world")
            #expect(getenv("CFFIXED_USER_HOME").map { String(cString: $0) } == app.application.containerURL.path)
        }
        #expect(getenv("CFFIXED_USER_HOME").map { String(cString: $0) } == home)
        #expect(Bundle.main.bundleIdentifier == identifier)
    }
}
