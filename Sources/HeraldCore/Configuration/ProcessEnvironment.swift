#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The process environment, read once.
public enum ProcessEnvironment {
    public static var variables: [String: String] { ProcessInfo.processInfo.environment }
}
