import UIKit

/// Ordinary networking and a background session in one file, as an iOS app writes them, under
/// `import UIKit` alone (docs/transfers.md, "Background transfers"): `URLSession.shared` with a
/// completion handler, a `.default` session with async/await, a `URLRequest` with a header
/// field, and a background download. Each result is a line on standard error:
///   networker: shared status=200 bytes=1000
///   networker: async status=200 bytes=2000
///   networker: background task=1 bytes=3000
///   networker: shared error=-1004 (or async, background)
/// The server is Info.plist's `NetworkerServer`.
@main
final class AppDelegate: UIResponder, UIApplicationDelegate {
    let downloads = BackgroundDownloads()

    func application(_ application: UIApplication, didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]?) -> Bool {
        let server = application.infoDictionary["NetworkerServer"] as? String ?? "http://127.0.0.1:9"
        URLSession.shared.dataTask(with: URL(string: server + "/files/1000")!) { data, response, error in
            Self.say("shared", data: data, response: response, error: error)
        }.resume()
        Task {
            var request = URLRequest(url: URL(string: server + "/files/2000")!)
            request.setValue("async", forHTTPHeaderField: "X-Episode")
            do {
                let (data, response) = try await URLSession(configuration: .default).data(for: request)
                Self.say("async", data: data, response: response, error: nil)
            } catch {
                Self.say("async", data: nil, response: nil, error: error)
            }
        }
        downloads.start(URL(string: server + "/files/3000")!)
        return true
    }

    nonisolated static func say(_ what: String, data: Data?, response: URLResponse?, error: (any Error)?) {
        let line = error.map { "error=\(($0 as? URLError)?.code.rawValue ?? 0)" }
            ?? "status=\((response as? HTTPURLResponse)?.statusCode ?? 0) bytes=\(data?.count ?? -1)"
        FileHandle.standardError.write(Data("networker: \(what) \(line)\n".utf8))
    }
}

/// A background session's delegate, beside the ordinary sessions.
final class BackgroundDownloads: NSObject, URLSessionDownloadDelegate, @unchecked Sendable {
    var session: URLSession?

    func start(_ url: URL) {
        let session = URLSession(configuration: .background(withIdentifier: "com.example.networker"), delegate: self, delegateQueue: nil)
        self.session = session
        session.downloadTask(with: url).resume()
    }

    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        let bytes = (try? Data(contentsOf: location))?.count ?? -1
        FileHandle.standardError.write(Data("networker: background task=\(downloadTask.taskIdentifier) bytes=\(bytes)\n".utf8))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        if let error { AppDelegate.say("background", data: nil, response: nil, error: error) }
    }
}
