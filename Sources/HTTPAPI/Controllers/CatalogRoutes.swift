import Domain
import Hummingbird
import UseCases

/// `GET /api/products`, `GET /api/resources`.
struct CatalogRoutes {
    let tenants: TenantRegistry
    let creditQueries: CreditQueries

    /// This controller's routes, one collection per group of callers (added in `buildRouter`).
    struct Routes {
        let open = RouteCollection(context: BerthRequestContext.self)
        let callers = RouteCollection(context: CatalogContext.self)
    }

    var routes: Routes {
        let routes = Routes()
        // Public: the purchase screen's catalog of a tenant that publishes it (`?tenant=`, no
        // credentials); with credentials, the caller's own tenant's.
        routes.open.get("/api/products", use: getProducts)
        routes.callers.get("/api/resources", use: getResources)
        return routes
    }

    /// `GET /api/products`
    func getProducts(_ request: Request, context: BerthRequestContext) async throws -> some ResponseGenerator {
        let runtime: TenantRuntime
        switch context.authentication {
        case .authenticated(let caller):
            runtime = caller.tenant
        case .refused(let error):
            throw error
        case .anonymous:
            guard let id = request.uri.queryParameters["tenant"], let found = tenants.tenant(id: String(id)),
                found.tenant.credits?.publicProducts == true
            else {
                throw APIError.unauthenticated("this app's products need Authorization: Bearer <client key, user token or API key>")
            }
            runtime = found
        }
        return try JSONCoding.response(ProductsResponse(products: try await products(runtime)))
    }

    /// `GET /api/resources`
    func getResources(_ request: Request, context: CatalogContext) async throws -> some ResponseGenerator {
        let tenant = context.tenant.tenant
        return try JSONCoding.response(
            ResourcesResponse(
                resources: tenant.resources.filter(\.inService).map {
                    ResourceDTO($0, currency: tenant.currency, tenantTimeZone: tenant.timeZone)
                }
            )
        )
    }

    /// The catalog's booking products, then the credit products on sale in display order (operators
    /// edit those at run time: the stored ones are listed).
    private func products(_ runtime: TenantRuntime) async throws -> [ProductDTO] {
        var products = runtime.tenant.products.filter { $0.kind != .credits }.map(ProductDTO.init)
        if runtime.tenant.credits != nil {
            products += try await creditQueries.activeProducts(tenantId: runtime.id).map(ProductDTO.init)
        }
        return products
    }
}

// MARK: - Request and answer types of these routes

struct ResourcesResponse: Codable {
    var resources: [ResourceDTO]
}
