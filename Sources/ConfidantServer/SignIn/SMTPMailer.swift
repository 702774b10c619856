import ConfidantAuth
import ConfidantCrypto
import Foundation
import Logging
import NIOCore
import NIOExtras
import NIOPosix
import NIOSSL

/// Sends sign-in codes through an SMTP server.
///
/// A small SMTP client (RFC 5321: EHLO, STARTTLS, MAIL, RCPT, DATA, QUIT) on SwiftNIO, written here
/// because no Swift SMTP library is available to this project; it sends one short plain-text
/// message per connection and nothing more.
struct SMTPMailer: CodeMailer {
    let configuration: SMTPConfiguration

    func send(code: String, to email: String, logger: Logger) async throws {
        let message = Self.message(code: code, from: configuration.sender, to: email)
        do {
            try await SMTPSession(configuration: configuration).deliver(message, from: configuration.sender, to: email)
        } catch {
            // The reason goes to the log (never the code); the caller gets a stable error.
            logger.error("could not send a sign-in code through \(configuration.host):\(configuration.port): \(error)")
            throw APIFailure(
                .mailUnavailable, "The server could not send the e-mail code right now; try again in a minute.")
        }
    }

    static func message(code: String, from sender: String, to recipient: String, date: Date = Date()) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        let domain = sender.split(separator: "@").last.map(String.init) ?? "confidant.invalid"
        return [
            "From: Confidant <\(sender)>",
            "To: <\(recipient)>",
            "Subject: Your Confidant sign-in code",
            "Date: \(formatter.string(from: date))",
            "Message-ID: <\(UUID().canonicalString)@\(domain)>",
            "MIME-Version: 1.0",
            "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit",
            "",
            "Your Confidant sign-in code is \(code).",
            "",
            "It works once and expires in 10 minutes. If you did not try to sign in, someone knows",
            "your password: change it.",
        ].joined(separator: "\r\n")
    }
}

/// What went wrong talking to the SMTP server.
enum SMTPError: Error, CustomStringConvertible {
    case unexpectedReply(command: String, code: Int, text: String)
    case connectionClosed(during: String)
    case tlsRequired
    case invalidAddress(String)

    var description: String {
        switch self {
        case .unexpectedReply(let command, let code, let text):
            return "the SMTP server answered \(command) with \(code) \(text)"
        case .connectionClosed(let step): return "the SMTP server closed the connection during \(step)"
        case .tlsRequired: return "the SMTP server does not offer STARTTLS, and TLS is required"
        case .invalidAddress(let address): return "\(address) cannot be used in an SMTP envelope"
        }
    }
}

/// One SMTP conversation.
struct SMTPSession {
    let configuration: SMTPConfiguration

    func deliver(_ message: String, from sender: String, to recipient: String) async throws {
        for address in [sender, recipient]
        where address.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "<" || $0 == ">" }) {
            throw SMTPError.invalidAddress(address)
        }
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connectTimeout(.seconds(10))
            .connect(host: configuration.host, port: configuration.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineBasedFrameDecoder()))
                    return try NIOAsyncChannel<ByteBuffer, ByteBuffer>(wrappingChannelSynchronously: channel)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            var lines = inbound.makeAsyncIterator()

            /// Reads one reply (continuation lines `250-…`, then `250 …`).
            func reply(to command: String) async throws -> (code: Int, lines: [String]) {
                var collected: [String] = []
                while true {
                    guard let buffer = try await lines.next() else { throw SMTPError.connectionClosed(during: command) }
                    let line = String(buffer: buffer).trimmingCharacters(in: .init(charactersIn: "\r"))
                    collected.append(line)
                    let bytes = Array(line.utf8)
                    if bytes.count < 4 || bytes[3] == UInt8(ascii: " ") {
                        return (Int(line.prefix(3)) ?? 0, collected)
                    }
                }
            }

            func expect(_ command: String, _ accepted: Set<Int>, send text: String?) async throws -> [String] {
                if let text { try await outbound.write(ByteBuffer(string: text + "\r\n")) }
                let answer = try await reply(to: command)
                guard accepted.contains(answer.code) else {
                    throw SMTPError.unexpectedReply(
                        command: command, code: answer.code,
                        text: answer.lines.last.map { String($0.dropFirst(4)) } ?? "")
                }
                return answer.lines
            }

            _ = try await expect("the greeting", [220], send: nil)
            var capabilities = try await expect("EHLO", [250], send: "EHLO \(configuration.heloName)")
            if capabilities.dropFirst().contains(where: { $0.dropFirst(4).uppercased().hasPrefix("STARTTLS") }) {
                _ = try await expect("STARTTLS", [220], send: "STARTTLS")
                var tls = TLSConfiguration.makeClientConfiguration()
                if let file = configuration.trustRootsFile { tls.trustRoots = .file(file) }
                let context = try NIOSSLContext(configuration: tls)
                // SNI takes names only; for an address, the certificate is checked against the address.
                let name = configuration.tlsServerName ?? configuration.host
                let serverName: String? = name.allSatisfy({ $0.isNumber || $0 == "." || $0 == ":" }) ? nil : name
                let raw = channel.channel
                // TLS goes under the line decoder, at the head of the pipeline, on the channel's loop.
                try await raw.eventLoop.submit {
                    try raw.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: context, serverHostname: serverName), position: .first)
                }.get()
                capabilities = try await expect("EHLO after STARTTLS", [250], send: "EHLO \(configuration.heloName)")
            } else if configuration.requireTLS {
                throw SMTPError.tlsRequired
            }
            _ = capabilities
            _ = try await expect("MAIL FROM", [250], send: "MAIL FROM:<\(sender)>")
            _ = try await expect("RCPT TO", [250, 251], send: "RCPT TO:<\(recipient)>")
            _ = try await expect("DATA", [354], send: "DATA")
            // Dot-stuffing (RFC 5321 §4.5.2), then the end-of-data line.
            let body = message.split(separator: "\r\n", omittingEmptySubsequences: false)
                .map { $0.hasPrefix(".") ? "." + $0 : String($0) }.joined(separator: "\r\n")
            _ = try await expect("the message", [250], send: body + "\r\n.")
            _ = try? await expect("QUIT", [221], send: "QUIT")
        }
    }
}
