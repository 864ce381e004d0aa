import Hummingbird

/// `GET /healthz`, `GET /api/products`, `GET /api/resources`.
struct CatalogRoutes {
    func register(on router: Router<BerthRequestContext>) {
        router.get("/healthz") { _, _ in try JSONCoding.response(HealthResponse()) }
        router.get("/api/products") { _, context in
            let tenant = try context.requireTenant().tenant
            return try JSONCoding.response(ProductsResponse(products: tenant.products.map(ProductDTO.init)))
        }
        router.get("/api/resources") { _, context in
            let tenant = try context.requireTenant().tenant
            return try JSONCoding.response(ResourcesResponse(resources: tenant.resources.map { ResourceDTO($0, currency: tenant.currency) }))
        }
    }
}
