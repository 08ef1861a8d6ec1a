import Foundation
public import AppHostRuntime

// The reports an app's test reads back: each app process that ended has one (README.md,
// "Reading reports").

extension TestHost {
    /// The termination reports of `app` (its CFBundleName or bundle identifier), or of every
    /// app, oldest first: every app process that ended has one, written before its
    /// `terminated` event.
    public func reports(_ app: String? = nil) throws -> [TerminationReport] {
        let store = ReportStore(stateDirectory: stateDirectory)
        return try store.list().compactMap { url in
            let report: TerminationReport
            do { report = try store.read(url) } catch {
                throw TestHostError("cannot read the report \(url.path): \(error)", code: .unreadableReport)
            }
            guard let app else { return report }
            return report.app == app || report.name == app || report.name.lowercased() == app.lowercased() ? report : nil
        }
    }

    /// The latest termination report of `app`, nil if it has none.
    public func report(_ app: String) throws -> TerminationReport? {
        try reports(app).last
    }
}
