/// Which Herald this is: `herald_build_info`, and `--version` where a command has one.
public enum HeraldVersion {
    /// The release this tree is on its way to (semantic versioning; `-dev` until it is tagged).
    public static let current = "0.2.0-dev"
}
