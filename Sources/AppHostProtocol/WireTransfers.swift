package import Foundation

// The background transfers' wire types (docs/transfers.md, "Background transfers"): a transfer as the SDK
// made it, how one ended or what it asks of the app, and the app's answer to a challenge.

/// A background URL session task as the SDK made it: what the host's transfer service carries
/// out for the app (docs/transfers.md, "Background transfers").
package struct WireTransfer: Codable, Sendable, Equatable {
    package enum Kind: String, Codable, Sendable {
        case download
        case upload
    }

    /// The session's identifier (`URLSessionConfiguration.background(withIdentifier:)`).
    package var session: String
    /// `taskIdentifier`, unique within the session.
    package var task: Int
    package var kind: Kind
    /// An absolute http or https URL.
    package var url: String
    /// For an upload: the body, a file in the app's container (as the app sees the path).
    package var file: String?
    /// The HTTP method; nil: GET for a download, POST for an upload.
    package var method: String?
    package var isDiscretionary: Bool
    package var sessionSendsLaunchEvents: Bool
    /// `taskDescription`, the app's own label.
    package var taskDescription: String?
    /// The request's header fields (`URLRequest.allHTTPHeaderFields`).
    package var headers: [String: String]?
    /// `earliestBeginDate`, seconds since 1970: the transfer waits for it.
    package var earliestBegin: Double?
    /// `downloadTask(withResumeData:)`: the resume data the host gave when the download it goes
    /// on from ended (the host kept its part file).
    package var resumeData: Data?

    package init(
        session: String, task: Int, kind: Kind, url: String, file: String? = nil, method: String? = nil,
        isDiscretionary: Bool = false, sessionSendsLaunchEvents: Bool = true, taskDescription: String? = nil,
        headers: [String: String]? = nil, earliestBegin: Double? = nil, resumeData: Data? = nil
    ) {
        self.resumeData = resumeData
        self.headers = headers
        self.earliestBegin = earliestBegin
        self.session = session
        self.task = task
        self.kind = kind
        self.url = url
        self.file = file
        self.method = method
        self.isDiscretionary = isDiscretionary
        self.sessionSendsLaunchEvents = sessionSendsLaunchEvents
        self.taskDescription = taskDescription
    }
}

/// A transfer that ended: what the session delegate is told.
package struct WireTransferEvent: Codable, Sendable, Equatable {
    package var transfer: WireTransfer
    /// The host's name for the transfer, the same at every delivery of it: an app that had it
    /// delivered before a host was killed (and delivers it again) acknowledges it unseen.
    package var id: String?
    /// The HTTP status of the response; nil if there was none.
    package var statusCode: Int?
    /// Bytes received (a download's body, an upload's response) and sent.
    package var bytesReceived: Int64
    package var bytesSent: Int64
    /// For a download that got a response: the file in the app's container (its tmp directory)
    /// that `urlSession(_:downloadTask:didFinishDownloadingTo:)` is given; removed once it returns.
    package var location: String?
    /// For an upload: the response body (cut at 64 KiB), as `urlSession(_:dataTask:didReceive:)` gets it.
    package var responseBody: Data?
    /// nil: completed. Else `URLError.Code` raw value and a message for the person.
    package var errorCode: Int?
    package var errorMessage: String?
    /// For a transfer the system cancelled: why (`NSURLErrorBackgroundTaskCancelledReasonKey`:
    /// 0 the user force quit the app, 1 background updates disabled, 2 insufficient resources).
    package var cancelledReason: Int?
    /// The response's length in all (`countOfBytesExpectedToReceive`), where it said.
    package var bytesExpected: Int64?
    /// For a download that ended without its whole body and that can go on (the host kept its
    /// part file): `NSURLSessionDownloadTaskResumeData`, what `downloadTask(withResumeData:)` takes.
    package var resumeData: Data?
    /// Not an end: the transfer asks for authentication, and waits for the app's answer
    /// (`AppMessage.transferChallengeAnswered`).
    package var challenge: WireChallenge?
    /// The response's header fields, as the server named them (`allHeaderFields`).
    package var headers: [String: String]?

    package init(
        transfer: WireTransfer, statusCode: Int? = nil, bytesReceived: Int64 = 0, bytesSent: Int64 = 0,
        location: String? = nil, responseBody: Data? = nil, errorCode: Int? = nil, errorMessage: String? = nil,
        cancelledReason: Int? = nil, challenge: WireChallenge? = nil
    ) {
        self.challenge = challenge
        self.cancelledReason = cancelledReason
        self.transfer = transfer
        self.statusCode = statusCode
        self.bytesReceived = bytesReceived
        self.bytesSent = bytesSent
        self.location = location
        self.responseBody = responseBody
        self.errorCode = errorCode
        self.errorMessage = errorMessage
    }
}

extension WireTransfer {
    /// `URLError.Code` raw values of the errors a transfer ends with (Foundation's).
    package enum ErrorCode {
        package static let cancelled = -999
        package static let badURL = -1000
        package static let timedOut = -1001
        package static let unsupportedURL = -1002
        package static let cannotFindHost = -1003
        package static let cannotConnectToHost = -1004
        package static let networkConnectionLost = -1005
        package static let httpTooManyRedirects = -1007
        package static let badServerResponse = -1011
        /// Resume data that names no download the host keeps for the app.
        package static let cannotDecodeRawData = -1015
        package static let secureConnectionFailed = -1200
        /// A server certificate the system does not trust, and the app did not either.
        package static let serverCertificateUntrusted = -1202
        package static let fileDoesNotExist = -1100
        package static let noPermissionsToReadFile = -1102
        package static let cannotWriteToFile = -3003
    }

    /// What is wrong with the transfer before it starts, as the SDK and the host both judge it:
    /// a URL that is not absolute http(s), an upload file that is not a file in `container`
    /// (symbolic links resolved). nil: nothing.
    package func problem(container: String) -> (code: Int, message: String)? {
        guard let parsed = URL(string: url), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = parsed.host, !host.isEmpty
        else {
            return (ErrorCode.unsupportedURL, "\(url.debugDescription) is not an absolute http or https URL")
        }
        guard kind == .upload else { return nil }
        guard let file, file.hasPrefix("/") else {
            return (ErrorCode.fileDoesNotExist, "an upload needs a file in the app's container, named by its absolute path")
        }
        let resolved = URL(fileURLWithPath: file).resolvingSymlinksInPath().path
        let root = URL(fileURLWithPath: container).resolvingSymlinksInPath().path
        guard resolved.hasPrefix(root.hasSuffix("/") ? root : root + "/") else {
            return (ErrorCode.noPermissionsToReadFile, "\(file) is outside the app's container (\(container)); upload a file from the container")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory), !isDirectory.boolValue else {
            return (ErrorCode.fileDoesNotExist, "\(file) does not exist or is not a file")
        }
        return nil
    }
}

/// An authentication challenge of a background transfer: the protection space as
/// `URLProtectionSpace` has it, and how often the credentials given for it failed.
package struct WireChallenge: Codable, Sendable, Equatable {
    package enum Method: String, Codable, Sendable {
        /// `NSURLAuthenticationMethodHTTPBasic`, `NSURLAuthenticationMethodHTTPDigest`.
        case basic, digest
        /// `NSURLAuthenticationMethodServerTrust`: a server certificate the system does not trust.
        case serverTrust
    }

    package var method: Method
    package var host: String
    package var port: Int
    /// "http" or "https".
    package var `protocol`: String
    package var realm: String?
    package var previousFailureCount: Int
    /// A server-trust challenge's certificate, the server's own (DER), and its subject (CN).
    package var certificate: Data?
    package var subject: String?

    package init(
        method: Method, host: String, port: Int, protocol: String, realm: String?, previousFailureCount: Int,
        certificate: Data? = nil, subject: String? = nil
    ) {
        self.certificate = certificate
        self.subject = subject
        self.method = method
        self.host = host
        self.port = port
        self.protocol = `protocol`
        self.realm = realm
        self.previousFailureCount = previousFailureCount
    }
}

/// The app's answer to a challenge: `URLSession.AuthChallengeDisposition` and the credential.
package struct WireChallengeAnswer: Codable, Sendable, Equatable {
    package enum Disposition: String, Codable, Sendable {
        case useCredential, performDefaultHandling, cancelAuthenticationChallenge, rejectProtectionSpace
    }

    /// `URLCredential.Persistence`: none, forSession, permanent, synchronizable.
    package enum Persistence: String, Codable, Sendable {
        case none, forSession, permanent, synchronizable
    }

    package var disposition: Disposition
    package var user: String?
    package var password: String?
    package var persistence: Persistence?
    /// `.useCredential` with `URLCredential(trust:)`: the server's certificate is trusted.
    package var trustsServer: Bool?

    package init(
        disposition: Disposition, user: String? = nil, password: String? = nil, persistence: Persistence? = nil, trustsServer: Bool? = nil
    ) {
        self.trustsServer = trustsServer
        self.disposition = disposition
        self.user = user
        self.password = password
        self.persistence = persistence
    }
}

/// What a download's resume data holds (`NSURLSessionDownloadTaskResumeData`, opaque to the app
/// as on iOS): the host's name for the transfer whose part file it kept, and the request to make
/// again. The host gives it and judges it again when a task goes on from it.
package struct WireResumeData: Codable, Sendable, Equatable {
    package var transfer: String
    package var url: String
    package var method: String?
    package var headers: [String: String]?
    /// The bytes kept, where the Range request starts.
    package var bytes: Int64

    package init(transfer: String, url: String, method: String?, headers: [String: String]?, bytes: Int64) {
        self.transfer = transfer
        self.url = url
        self.method = method
        self.headers = headers
        self.bytes = bytes
    }

    package var data: Data { Data(WireCoding.encode(json: self)) }

    package init?(_ data: Data) {
        guard let decoded = try? WireCoding.decode(json: WireResumeData.self, from: Array(data)) else { return nil }
        self = decoded
    }
}
