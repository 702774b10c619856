import ConfidantCrypto
import ConfidantKit
import Foundation
import Vapor

/// Verifying a peer by safety numbers: one per device, each also as a QR code to scan, and
/// marking the keys verified (or no longer).
struct VerifyPages {
    let context: AppContext

    func register(on routes: any RoutesBuilder) {
        routes.get(.verify(.key)) { request in try await verification(request) }
        routes.post(.verify(.key)) { request in try await mark(request, verified: true) }
        routes.post(.unverify(.key)) { request in try await mark(request, verified: false) }
        routes.get(.verifyCode(.key, device: .key)) { request in try await qrCode(request) }
    }

    private func verification(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let model = await ChatViewModel(messenger: messenger, peer: contact)
        await model.checkVerification()
        let page = await MainActor.run {
            let flash = context.session.takeFlash()
            return VerifyPageModel(
                page: context.info("Verify \(contact.displayName)", error: flash?.error ?? model.error), peer: contact,
                verification: model.verification)
        }
        return try await request.page("verify", page)
    }

    /// Marks the keys verified, or no longer, and goes back to the page (post/redirect/get).
    private func mark(_ request: Request, verified: Bool) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        let model = await ChatViewModel(messenger: messenger, peer: contact)
        if verified { await model.markVerified() } else { await model.unmarkVerified() }
        await MainActor.run { context.session.flash = (model.error, nil) }
        return request.redirect(to: .verify(.value(contact.id)))
    }

    /// The safety number with one device as a QR code (SVG), for the peer to scan.
    private func qrCode(_ request: Request) async throws -> Response {
        let (messenger, contact) = try await context.chatPeer(request)
        guard let name = request.text(.device), name.hasSuffix(".svg"),
            let device = UUID(uuidString: String(name.dropLast(4)))
        else { throw Abort(.notFound, reason: "There is no such device.") }
        let verification = try await messenger.verification(of: contact)
        guard let number = verification.safetyNumbers.first(where: { $0.deviceID == device })?.number else {
            throw Abort(.notFound, reason: "\(contact.displayName) has no such device now.")
        }
        let code = try QRCode(text: number.digits, correction: .medium)
        return Response(status: .ok, headers: ["Content-Type": "image/svg+xml"], body: .init(string: code.svg))
    }
}

/// The verification page as its template reads it.
struct VerifyPageModel: Encodable, Sendable {
    struct Device: Encodable, Sendable {
        let deviceID: String
        let shortID: String
        let number: String
        let code: String
    }

    let page: PageInfo
    let peer: PersonView
    /// "verified", "changed" or "unverified".
    let state: String
    let stateText: String
    let isVerified: Bool
    let unverify: String
    let devices: [Device]

    init(page: PageInfo, peer: Contact, verification: PeerVerification?) {
        self.page = page
        self.peer = PersonView(peer)
        (state, stateText) =
            switch verification?.state {
            case .verified?: ("verified", "Verified: these are the keys you compared.")
            case .changedSinceVerification?:
                ("changed", "The keys changed since you verified them. Compare the numbers again.")
            case .unverified?, nil: ("unverified", "Not verified yet.")
            }
        isVerified = verification?.state == .verified
        unverify = AppRoute.unverify(.value(peer.id)).path
        devices = (verification?.safetyNumbers ?? []).map { device, number in
            Device(
                deviceID: device.canonicalString, shortID: String(device.uuidString.prefix(8)), number: number.grouped,
                code: AppRoute.verifyCode(.value(peer.id), device: .value(device)).path)
        }
    }
}
