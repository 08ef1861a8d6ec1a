#if canImport(Glibc)
// As Apple's os module re-exports Darwin: a library that imports os instead of Glibc (argument
// parser's Mutex) still calls `pthread_mutex_destroy` behind `#if canImport(Glibc)`.
@_exported public import Glibc
#endif

// os's locks, as cross-platform libraries use them behind `#if canImport(os)` (swift-argument-parser's
// Mutex, swift-async-algorithms' Lock): such a library compiles against this module whenever it is
// in the build's module directory, and is linked into programs that never link it (README.md,
// "Porting iOS code"). So nothing here needs a symbol of this module: `os_unfair_lock` is glibc's
// mutex by another name (zeroed, as `os_unfair_lock()` makes it, it is PTHREAD_MUTEX_INITIALIZER),
// and the functions and `OSAllocatedUnfairLock`'s methods are emitted into their callers.

/// An unfair lock, as os's `os_unfair_lock`: `os_unfair_lock()` is an unlocked one.
public typealias os_unfair_lock = pthread_mutex_t
/// A pointer to an `os_unfair_lock`.
public typealias os_unfair_lock_t = UnsafeMutablePointer<os_unfair_lock>

/// Locks `lock`, waiting for it.
@_alwaysEmitIntoClient
public func os_unfair_lock_lock(_ lock: os_unfair_lock_t) {
    pthread_mutex_lock(lock)
}

/// Unlocks `lock`, which the calling thread holds.
@_alwaysEmitIntoClient
public func os_unfair_lock_unlock(_ lock: os_unfair_lock_t) {
    pthread_mutex_unlock(lock)
}

/// Locks `lock` if it is free; whether it did.
@_alwaysEmitIntoClient
public func os_unfair_lock_trylock(_ lock: os_unfair_lock_t) -> Bool {
    pthread_mutex_trylock(lock) == 0
}

/// Does nothing: glibc's default mutex does not record its owner.
@_alwaysEmitIntoClient
public func os_unfair_lock_assert_owner(_ lock: os_unfair_lock_t) {}

/// Does nothing: glibc's default mutex does not record its owner.
@_alwaysEmitIntoClient
public func os_unfair_lock_assert_not_owner(_ lock: os_unfair_lock_t) {}

/// A lock that owns its state, as os's `OSAllocatedUnfairLock`: `withLock` runs a closure with
/// the state, the lock held.
@frozen
public struct OSAllocatedUnfairLock<State>: @unchecked Sendable {
    /// The state and the mutex, in the standard library's class (whose metadata needs nothing
    /// of this module). Destroying a default glibc mutex does nothing, so none is destroyed.
    @usableFromInline let storage: ManagedBuffer<State, os_unfair_lock>

    @_alwaysEmitIntoClient
    public init(initialState: State) {
        storage = .create(minimumCapacity: 1) { _ in initialState }
        storage.withUnsafeMutablePointerToElements { $0.initialize(to: os_unfair_lock()) }
    }

    /// Runs `body` with the state, the lock held.
    @_alwaysEmitIntoClient
    public func withLock<R>(_ body: @Sendable (inout State) throws -> R) rethrows -> R where R: Sendable {
        try withLockUnchecked(body)
    }

    /// `withLock` without checking that what crosses is Sendable.
    @_alwaysEmitIntoClient
    public func withLockUnchecked<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try storage.withUnsafeMutablePointers { state, lock in
            pthread_mutex_lock(lock)
            defer { pthread_mutex_unlock(lock) }
            return try body(&state.pointee)
        }
    }

    /// Runs `body` if the lock is free now; nil if it was not.
    @_alwaysEmitIntoClient
    public func withLockIfAvailable<R>(_ body: @Sendable (inout State) throws -> R) rethrows -> R? where R: Sendable {
        try storage.withUnsafeMutablePointers { state, lock in
            guard pthread_mutex_trylock(lock) == 0 else { return nil }
            defer { pthread_mutex_unlock(lock) }
            return try body(&state.pointee)
        }
    }

    /// Locks; pair it with `unlock()`.
    @_alwaysEmitIntoClient
    public func lock() { storage.withUnsafeMutablePointerToElements { _ = pthread_mutex_lock($0) } }

    @_alwaysEmitIntoClient
    public func unlock() { storage.withUnsafeMutablePointerToElements { _ = pthread_mutex_unlock($0) } }
}

extension OSAllocatedUnfairLock where State == Void {
    /// A lock without state.
    @_alwaysEmitIntoClient
    public init() { self.init(initialState: ()) }

    /// Runs `body` with the lock held.
    @_alwaysEmitIntoClient
    public func withLock<R>(_ body: @Sendable () throws -> R) rethrows -> R where R: Sendable {
        try withLockUnchecked { _ in try body() }
    }
}
