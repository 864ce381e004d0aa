import AppleSignedData
import Domain

// Apple's word for an environment and the one purchases are stored under are the same text;
// these keep the conversion in the App Store's room.

extension StoreEnvironment {
    /// The environment Apple named (`Production`, `Sandbox`, `Xcode`, `LocalTesting`).
    public init(_ apple: AppStoreEnvironment) { self.init(rawValue: apple.rawValue) }
}

extension AppStoreEnvironment {
    /// The App Store's environment of a stored purchase or subscription.
    public init(_ stored: StoreEnvironment) { self.init(rawValue: stored.rawValue) }
}
