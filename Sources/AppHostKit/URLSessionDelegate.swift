public import Foundation
public import FoundationNetworking

// The session delegate protocols as iOS has them (docs/transfers.md, "Background transfers"), for
// AppHostKit's `URLSession`, which is FoundationNetworking's with background sessions added.
// An app's delegate method names the session `URLSession`, which in an app is AppHostKit's: so
// these protocols declare their methods with it, and each refines FoundationNetworking's
// protocol of the same name, whose methods (which name FoundationNetworking's session) this file
// implements by calling the app's. One delegate object thus serves an ordinary session, run by
// FoundationNetworking in the app, and a background session, run by the host.
// As on iOS, a delegate is an NSObject (NSObjectProtocol) and Sendable: its methods run on the
// session's delegate queue, not on the main actor.

public protocol URLSessionDelegate: FoundationNetworking.URLSessionDelegate {
    func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?)
    /// A connection-level challenge (a server's certificate that the system does not trust).
    func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
    /// The events of `application(_:handleEventsForBackgroundURLSession:completionHandler:)` were
    /// all delivered: call the completion handler it gave (on the main queue, as UIKit asks).
    func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession)
}

public protocol URLSessionTaskDelegate: URLSessionDelegate, FoundationNetworking.URLSessionTaskDelegate {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void)
    /// A request's challenge: a 401 with `WWW-Authenticate` (Basic, Digest), or a server's
    /// certificate where the session delegate does not take it.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
    /// An upload sent more of its body (a background one: while the app runs, at most four times a second).
    func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64)
    /// The task ended: `error` is nil if it completed (a `URLError` otherwise).
    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?)
}

public protocol URLSessionDataDelegate: URLSessionTaskDelegate, FoundationNetworking.URLSessionDataDelegate {
    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void)
    /// Data received: a data task's, or a background upload's response body.
    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data)
}

public protocol URLSessionDownloadDelegate: URLSessionTaskDelegate, FoundationNetworking.URLSessionDownloadDelegate {
    /// The download is in `location`, a temporary file that is removed when this returns: move
    /// it into the container before returning.
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL)
    /// The download received more (a background one: while the app runs, at most four times a
    /// second). `totalBytesExpectedToWrite` is -1 where the server did not say.
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64)
    /// A download made from resume data went on from `fileOffset`.
    func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64)
}

// MARK: What an app's delegate need not implement

extension URLSessionDelegate {
    public func urlSession(_ session: URLSession, didBecomeInvalidWithError error: (any Error)?) {}
    public func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // Not implemented: a background transfer's server-trust challenge goes to the task delegate.
        if (challenge.sender as? ChallengeSender)?.handOn() == true { return }
        completionHandler(.performDefaultHandling, nil)
    }
    public func urlSessionDidFinishEvents(forBackgroundURLSession session: URLSession) {}
}

extension URLSessionTaskDelegate {
    public func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(request)
    }
    public func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.performDefaultHandling, nil)
    }
    public func urlSession(_ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
    public func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {}
}

extension URLSessionDataDelegate {
    public func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        completionHandler(.allow)
    }
    public func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {}
}

extension URLSessionDownloadDelegate {
    public func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64, totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64) {}
    public func urlSession(_ session: URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {}
}

// MARK: FoundationNetworking's calls, for an ordinary session, passed on to the app's methods

/// The session FoundationNetworking passes: AppHostKit's, as every session an app makes is.
private func own(_ session: FoundationNetworking.URLSession) -> URLSession {
    // swiftlint:disable:next force_cast
    session as! URLSession
}

extension URLSessionDelegate {
    public func urlSession(_ session: FoundationNetworking.URLSession, didBecomeInvalidWithError error: (any Error)?) {
        urlSession(own(session), didBecomeInvalidWithError: error)
    }
    public func urlSession(
        _ session: FoundationNetworking.URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        urlSession(own(session), didReceive: challenge, completionHandler: completionHandler)
    }
}

extension URLSessionTaskDelegate {
    public func urlSession(
        _ session: FoundationNetworking.URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        urlSession(own(session), task: task, willPerformHTTPRedirection: response, newRequest: request, completionHandler: completionHandler)
    }
    public func urlSession(
        _ session: FoundationNetworking.URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        urlSession(own(session), task: task, didReceive: challenge, completionHandler: completionHandler)
    }
    public func urlSession(
        _ session: FoundationNetworking.URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        urlSession(own(session), task: task, didSendBodyData: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend)
    }
    public func urlSession(_ session: FoundationNetworking.URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        urlSession(own(session), task: task, didCompleteWithError: error)
    }
}

extension URLSessionDataDelegate {
    public func urlSession(
        _ session: FoundationNetworking.URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        urlSession(own(session), dataTask: dataTask, didReceive: response, completionHandler: completionHandler)
    }
    public func urlSession(_ session: FoundationNetworking.URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        urlSession(own(session), dataTask: dataTask, didReceive: data)
    }
}

extension URLSessionDownloadDelegate {
    public func urlSession(_ session: FoundationNetworking.URLSession, downloadTask: URLSessionDownloadTask, didFinishDownloadingTo location: URL) {
        urlSession(own(session), downloadTask: downloadTask, didFinishDownloadingTo: location)
    }
    public func urlSession(
        _ session: FoundationNetworking.URLSession, downloadTask: URLSessionDownloadTask, didWriteData bytesWritten: Int64,
        totalBytesWritten: Int64, totalBytesExpectedToWrite: Int64
    ) {
        urlSession(own(session), downloadTask: downloadTask, didWriteData: bytesWritten, totalBytesWritten: totalBytesWritten, totalBytesExpectedToWrite: totalBytesExpectedToWrite)
    }
    public func urlSession(_ session: FoundationNetworking.URLSession, downloadTask: URLSessionDownloadTask, didResumeAtOffset fileOffset: Int64, expectedTotalBytes: Int64) {
        urlSession(own(session), downloadTask: downloadTask, didResumeAtOffset: fileOffset, expectedTotalBytes: expectedTotalBytes)
    }
}
