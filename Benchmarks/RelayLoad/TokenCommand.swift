import ArgumentParser
import AsyncHTTPClient
import ConfidantAPI
import Foundation
import NIOPosix
import OpenAPIAsyncHTTPClient

/// `relay-load token`: signs a fresh benchmark account up on a running development relay and
/// prints its bearer token, for reference transfers (`curl`) against the same server in the same
/// run (Benchmarks/attachments.sh). The sign-in code is read from the relay's development outbox.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token", abstract: "Sign a benchmark account up and print its session token.")

    @Option(help: "The relay, e.g. http://127.0.0.1:8080.") var server: String
    @Option(help: "The relay's data directory (its development outbox is read for the code).") var dataDir: String

    func run() async throws {
        guard let base = URL(string: server + "/v1") else { throw ValidationError("\(server) is not a URL.") }
        let http = HTTPClient(eventLoopGroupProvider: .shared(MultiThreadedEventLoopGroup.singleton))
        do {
            let user = try await BenchUser.make(
                index: 0,
                client: { token in
                    Client(
                        serverURL: base, configuration: APIConfiguration.default,
                        transport: AsyncHTTPClientTransport(configuration: .init(client: http)),
                        middlewares: token.map { [BearerTokenMiddleware(token: $0)] } ?? [])
                }, outbox: URL(fileURLWithPath: dataDir).appendingPathComponent("outbox"))
            print(user.token)
        } catch {
            try? await http.shutdown()
            throw error
        }
        try await http.shutdown()
    }
}
