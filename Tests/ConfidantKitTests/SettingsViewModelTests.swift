import ConfidantTestSupport
import Foundation
import Testing

@testable import ConfidantKit

@MainActor
@Suite("Settings against a real relay")
struct SettingsViewModelTests {
    @Test(
        "devices sign in named for their platform, Settings lists them this one first with their activity, renames one and says why a name is refused"
    )
    func namedDevices() async throws {
        try await TestRelay.run { relay in
            try await KitUser.removing(try await KitUser.register(relay, name: "Alice")) { alice in
                try await KitUser.removing(try await alice.secondDevice(relay)) { laptop in
                    let model = SettingsViewModel(messenger: alice.messenger)
                    await model.load()
                    let me = alice.messenger.identity.deviceID
                    let other = laptop.messenger.identity.deviceID
                    #expect(model.devices.map(\.id) == [me, other])
                    #expect(model.devices.map(\.isThisDevice) == [true, false])
                    #expect(model.devices.allSatisfy { $0.name == OwnDevice.platformName })
                    #expect(model.devices.allSatisfy { $0.lastSeenAt != nil })

                    #expect(await model.renameDevice(other, to: " Laptop at work "))
                    #expect(model.notice == "The device is now called “Laptop at work”.")
                    #expect(model.devices.last?.displayName == "Laptop at work")
                    let seenThere = try await laptop.messenger.ownDevices()
                    #expect(seenThere.first?.name == "Laptop at work", "the other device lists itself first")

                    #expect(await model.renameDevice(me, to: String(repeating: "x", count: 41)) == false)
                    #expect(model.error?.contains("1 to 40 characters") == true)
                    #expect(model.devices.first?.name == OwnDevice.platformName, "a refused name changes nothing")

                    await model.removeDevice(other)
                    #expect(model.notice == "Laptop at work is removed.")
                    #expect(model.devices.map(\.id) == [me])
                }
            }
        }
    }
}
