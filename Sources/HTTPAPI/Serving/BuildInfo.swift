/// What this build of Berth is: `berth --version` and the `berth_build_info` metric.
public enum BuildInfo {
    /// The release this source tree is (CHANGELOG.md names each).
    public static let version = "0.55.0"
    /// The commit a release build was made from (`scripts/release` stamps it, BuildStamp.swift);
    /// a development build says `development`.
    public static let commit = buildStampCommit

    /// `0.45.0 (development)`.
    public static var description: String { "\(version) (\(commit))" }
}
