/// The permanent audit log.
public protocol AuditRepository {
    func append(_ record: AuditRecord) throws
    func audit(tenantId: String, page: Page) throws -> (items: [AuditEntry], total: Int)
}
