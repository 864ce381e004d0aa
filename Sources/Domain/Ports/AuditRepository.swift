/// The permanent audit log.
public protocol AuditRepository {
    func append(_ record: AuditRecord) throws
    /// The tenant's audit trail, newest first; with `bookingId`, that booking's only.
    func audit(tenantId: String, bookingId: Int64?, page: Page) throws -> (items: [AuditEntry], total: Int)
}

extension AuditRepository {
    public func audit(tenantId: String, page: Page) throws -> (items: [AuditEntry], total: Int) {
        try audit(tenantId: tenantId, bookingId: nil, page: page)
    }
}
