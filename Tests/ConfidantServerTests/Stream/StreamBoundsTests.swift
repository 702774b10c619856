import ConfidantAPI
import ConfidantCrypto
import ConfidantTestSupport
import Foundation
import NIOWebSocket
import Testing
import WebSocketKit

@testable import ConfidantServer

/// How many streams one device, or one address before its proof, can make an instance hold.
@Suite("Streams per device and per address")
struct StreamBoundsTests {
    @Test("a device keeps at most four proven streams: a fifth supersedes the oldest (4409), the others stay open")
    func streamsPerDevice() async throws {
        try await TestRelay.run { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            var streams: [StreamClient] = []
            for _ in 0..<MailboxHub.maximumStreamsPerDevice {
                let stream = try await StreamClient.connect(port: relay.port, user: alice)
                #expect(await stream.frames.next(1).first?.caughtUp == true)
                streams.append(stream)
            }
            let newest = try await StreamClient.connect(port: relay.port, user: alice)
            #expect(await newest.frames.next(1).first?.caughtUp == true)
            #expect(
                try await RevocationTests.closeCode(of: streams[0]) == .unknown(StreamCloseCode.superseded.rawValue))
            for stream in streams.dropFirst() + [newest] { #expect(!stream.socket.isClosed) }
            // The open ones still get what is sent to the device.
            let bob = try await TestUser.make(relay, name: "bob")
            _ = try await bob.send("to every stream", to: [(alice.address, alice.identity.publicIdentity)])
            for stream in streams.dropFirst() + [newest] {
                #expect(await stream.frames.first { $0.entry != nil } != nil)
            }
            for stream in streams + [newest] { await stream.close() }
        }
    }

    @Test("streams that have not proven their key are bounded per address; proving or closing gives the place back")
    func unprovenPerAddress() async throws {
        // Long enough that none of the waiting streams is closed for not proving its key while
        // the others connect (the whole suite shares two cores).
        try await TestRelay.run(adjust: { $0.streamProofSeconds = 600 }) { relay in
            let alice = try await TestUser.make(relay, name: "alice")
            var waiting: [StreamClient] = []
            for _ in 0..<UnprovenStreams.maximumPerAddress {
                let stream = try await StreamClient.connect(port: relay.port, user: alice, proving: false)
                #expect(await stream.frames.next(1).first?.challenge != nil)
                waiting.append(stream)
            }
            // One more from this address is refused before the upgrade.
            await #expect(throws: (any Error).self) {
                _ = try await StreamClient.connect(port: relay.port, user: alice, proving: false)
            }
            await waiting.removeFirst().close()
            var proven: StreamClient?
            for _ in 0..<50 where proven == nil {
                // The closed one's place comes back once the relay has seen it close.
                if let stream = try? await StreamClient.connect(port: relay.port, user: alice) {
                    proven = stream
                } else {
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            let stream = try #require(proven, "a place came back after one unproven stream closed")
            #expect(await stream.frames.next(1).first?.caughtUp == true)
            for stream in waiting + [stream] { await stream.close() }
        }
    }
}
