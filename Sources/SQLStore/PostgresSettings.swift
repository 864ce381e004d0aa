import Foundation

/// Where and how to reach PostgreSQL, from `--database postgres://user@host:port/db?…`.
///
/// The password never appears in the URL (it would show in process lists, shell history and logs):
/// it is read from `BERTH_DATABASE_PASSWORD` (or libpq's `PGPASSWORD`). Query parameters:
/// `sslmode` (`disable`, `prefer`, `require`; default `require`: with `prefer`, a man in the middle
/// who declines TLS is sent the password in clear), `pool_size` (connections per
/// instance, default 16), `connect_timeout` (seconds to open a connection, default 10),
/// `acquire_timeout` (seconds a unit of work waits for a connection before the client gets 503,
/// default 5), `statement_timeout` (seconds any statement may run, default 30) and `attempts`
/// (tries of a unit of work on transient failures, default 4).
public struct PostgresSettings: Sendable, Hashable {
    public enum TLSMode: String, Sendable, Hashable {
        case disable, prefer, require
    }

    public var host: String
    public var port: Int
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode = .require
    public var poolSize = 16
    public var connectTimeout: Double = 10
    public var acquireTimeout: Double = 5
    public var statementTimeout: Double = 30
    public var attempts = 4

    public init(host: String, port: Int = 5432, username: String, password: String? = nil, database: String) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
    }

    /// Parses a `postgres://` (or `postgresql://`) URL; the password comes from `environment`.
    public init(url: String, environment: [String: String]) throws {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://"), let components = URLComponents(string: url) else {
            throw StoreError("unsupported database URL; use postgres://USER@HOST:PORT/DATABASE")
        }
        guard components.password == nil else {
            throw StoreError(
                "put the PostgreSQL password in BERTH_DATABASE_PASSWORD, not in the database URL (URLs end up in logs and process lists)"
            )
        }
        guard let host = components.host, !host.isEmpty else { throw StoreError("the database URL names no host") }
        guard let user = components.user, !user.isEmpty else { throw StoreError("the database URL names no user (postgres://USER@HOST/DATABASE)") }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty else { throw StoreError("the database URL names no database (postgres://USER@HOST/DATABASE)") }
        self.init(
            host: host,
            port: components.port ?? 5432,
            username: user.removingPercentEncoding ?? user,
            password: environment["BERTH_DATABASE_PASSWORD"] ?? environment["PGPASSWORD"],
            database: database
        )
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            func number(_ range: ClosedRange<Double>) throws -> Double {
                guard let number = Double(value), range.contains(number) else {
                    throw StoreError("database URL parameter \(item.name)=\(value) must be a number in \(range.lowerBound)...\(range.upperBound)")
                }
                return number
            }
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else { throw StoreError("sslmode must be disable, prefer or require (got \(value))") }
                tls = mode
            case "pool_size": poolSize = Int(try number(1...500))
            case "connect_timeout": connectTimeout = try number(0.1...300)
            case "acquire_timeout": acquireTimeout = try number(0.1...300)
            case "statement_timeout": statementTimeout = try number(0.1...3600)
            case "attempts": attempts = Int(try number(1...20))
            default:
                throw StoreError(
                    "unknown database URL parameter \(item.name) (known: sslmode, pool_size, connect_timeout, acquire_timeout, statement_timeout, attempts)"
                )
            }
        }
    }

    /// The URL as logs show it (never a password).
    public var redacted: String {
        "postgres://\(username)@\(host):\(port)/\(database)?sslmode=\(tls.rawValue)&pool_size=\(poolSize)"
    }
}
