import Foundation

/// The OpenAPI document the generated code in this module was made from.
public enum APIDocument {
    /// The bytes of `openapi.yaml`, as the server serves them at `/openapi.yaml`.
    public static func yaml() throws -> Data {
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml") else {
            throw CocoaError(.fileNoSuchFile)
        }
        return try Data(contentsOf: url)
    }
}
