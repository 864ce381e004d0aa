import Foundation

/// Where a key lives decides what it may do.
public enum APIKeyRole: String, Codable, Hashable, Sendable, CaseIterable {
    /// Shipped in an app bundle or a validator URL, so public: submits a store's proof for the user
    /// it names and reads that user's own state. Moves no value without a proof.
    case client
    /// The app's own backend, acting for any of its users (`X-User-Id`).
    case server
    /// Operators: the admin routes and the admin page.
    case admin

    /// The scopes a key of this role holds unless it was created with fewer.
    public var scopes: Set<KeyScope> {
        switch self {
        case .client: [.purchases, .read]
        case .server: [.purchases, .read, .bookings, .credits, .subscriptions, .memberships]
        // `read`: what the routes operators share with users serve (one subscription by id).
        case .admin: [.admin, .read, .memberships, .subscriptions]
        }
    }
}

/// What a key may be used for, narrower than its role when a backend needs only part of it
/// (`berth keys create --role server --scope purchases,read`).
public enum KeyScope: String, Codable, Hashable, Sendable, CaseIterable, Comparable {
    /// Submit a store's proof of purchase (verify-purchase, verify-receipt, the validator).
    case purchases
    /// Read a user's own state: entitlements, credits, subscriptions, bookings, the catalog.
    case read
    /// Create bookings (holds on inventory).
    case bookings
    /// Reserve, commit and release a user's credits.
    case credits
    /// Link and unlink subscriptions by id, refresh them, read stored receipts.
    case subscriptions
    /// Record memberships paid outside the App Store.
    case memberships
    /// The admin routes.
    case admin

    public static func < (a: KeyScope, b: KeyScope) -> Bool {
        (allCases.firstIndex(of: a) ?? 0) < (allCases.firstIndex(of: b) ?? 0)
    }

    /// Parses `a,b c` (commas or spaces), as the command line takes them.
    public static func parse(_ text: String) -> Result<Set<KeyScope>, UnknownScope> {
        parse(names: text.split(whereSeparator: { $0 == "," || $0 == " " }).map(String.init))
    }

    /// Parses scope names; the failure names the first unknown one.
    public static func parse(names: [String]) -> Result<Set<KeyScope>, UnknownScope> {
        var scopes: Set<KeyScope> = []
        for name in names {
            guard let scope = KeyScope(rawValue: name) else { return .failure(UnknownScope(name: name)) }
            scopes.insert(scope)
        }
        return .success(scopes)
    }

    public struct UnknownScope: Error, Hashable, Sendable {
        public var name: String
    }
}

/// A stored API key (only its SHA-256 is stored).
public struct APIKey: Hashable, Sendable {
    public var id: Int64
    public var tenantId: String
    public var role: APIKeyRole
    /// What the key may do: the role's scopes, or fewer.
    public var scopes: Set<KeyScope>
    /// A label chosen by whoever created it ("iOS app 2.3", "booking backend").
    public var name: String
    /// The first characters of the key, enough to recognise it, never enough to use it.
    public var hint: String
    public var createdAt: Date
    /// After this instant the key no longer works (set by rotation, or at creation).
    public var expiresAt: Date?
    public var revokedAt: Date?
    /// When it last authenticated a request (recorded at most about once a minute).
    public var lastUsedAt: Date?
    /// The key this one replaced by rotation.
    public var rotatedFrom: Int64?

    public init(
        id: Int64,
        tenantId: String,
        role: APIKeyRole,
        scopes: Set<KeyScope>? = nil,
        name: String = "",
        hint: String = "",
        createdAt: Date,
        expiresAt: Date? = nil,
        revokedAt: Date? = nil,
        lastUsedAt: Date? = nil,
        rotatedFrom: Int64? = nil
    ) {
        self.id = id
        self.tenantId = tenantId
        self.role = role
        self.scopes = scopes.map { $0.intersection(role.scopes) } ?? role.scopes
        self.name = name
        self.hint = hint
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.lastUsedAt = lastUsedAt
        self.rotatedFrom = rotatedFrom
    }

    /// Whether the key authenticates requests at `now`.
    public func isActive(at now: Date) -> Bool {
        revokedAt == nil && (expiresAt.map { $0 > now } ?? true)
    }

    public enum Status: String, Sendable { case active, expiring, expired, revoked }

    public func status(at now: Date) -> Status {
        if revokedAt != nil { return .revoked }
        guard let expiresAt else { return .active }
        return expiresAt > now ? .expiring : .expired
    }
}

/// What a new key is made of (the caller generates the secret and hashes it).
public struct NewAPIKey: Hashable, Sendable {
    public var tenantId: String
    public var role: APIKeyRole
    public var scopes: Set<KeyScope>?
    public var name: String
    public var hint: String
    public var hash: String
    public var expiresAt: Date?
    public var rotatedFrom: Int64?

    public init(
        tenantId: String,
        role: APIKeyRole,
        scopes: Set<KeyScope>? = nil,
        name: String = "",
        hint: String = "",
        hash: String,
        expiresAt: Date? = nil,
        rotatedFrom: Int64? = nil
    ) {
        self.tenantId = tenantId
        self.role = role
        self.scopes = scopes
        self.name = name
        self.hint = hint
        self.hash = hash
        self.expiresAt = expiresAt
        self.rotatedFrom = rotatedFrom
    }
}

/// The rules of key management: what a role may be narrowed to, how long a rotated key lives.
public enum KeyRules {
    /// The longest a rotated-out key stays valid beside its successor.
    public static let maximumOverlap: TimeInterval = 90 * 24 * 3600
    public static let defaultOverlap: TimeInterval = 24 * 3600
    public static let maximumNameLength = 100

    /// The scopes a new key gets: nil (the role's) or a non-empty subset of the role's.
    public static func scopes(_ requested: Set<KeyScope>?, for role: APIKeyRole) throws(DomainError) -> Set<KeyScope>? {
        guard let requested else { return nil }
        guard !requested.isEmpty else { throw DomainError(.invalidInput, .invalidField, "scopes must name at least one scope", field: "scopes") }
        let extra = requested.subtracting(role.scopes)
        guard extra.isEmpty else {
            throw DomainError(
                .invalidInput,
                .invalidField,
                "\(role == .admin ? "an" : "a") \(role.rawValue) key cannot hold \(extra.sorted().map(\.rawValue).joined(separator: ", ")) (it may hold \(role.scopes.sorted().map(\.rawValue).joined(separator: ", ")))",
                field: "scopes"
            )
        }
        return requested == role.scopes ? nil : requested
    }

    /// A key's label: trimmed, at most 100 characters.
    public static func name(_ text: String?) throws(DomainError) -> String {
        let name = Text.trimmed(text ?? "")
        guard Text.length(name) <= maximumNameLength else {
            throw DomainError(.invalidInput, .invalidField, "name is limited to \(maximumNameLength) characters", field: "name")
        }
        return name
    }

    /// When a key rotated out at `now` stops working.
    public static func rotationExpiry(now: Date, overlap: TimeInterval?) throws(DomainError) -> Date {
        let overlap = overlap ?? defaultOverlap
        guard overlap.isFinite, overlap >= 0, overlap <= maximumOverlap else {
            throw DomainError(.invalidInput, .invalidField, "the overlap must be between 0 and 90 days", field: "overlapSeconds")
        }
        return now.addingTimeInterval(overlap)
    }
}
