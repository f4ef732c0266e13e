import ServiceLifecycle

/// Waits `duration` between two rounds of a service's periodic work, waking early when the
/// process shuts down gracefully (or the task is cancelled).
///
/// `Task.sleep` alone does not wake at graceful shutdown: a service that sleeps ten minutes
/// between retention sweeps would hold SIGTERM for up to ten minutes, and an orchestrator would
/// SIGKILL it instead. Every service loop of the form "work, sleep, until shutdown" sleeps with
/// this.
public func sleepUntilGracefulShutdown(for duration: Duration) async {
    await cancelWhenGracefulShutdown {
        try? await Task.sleep(for: duration)
    }
}
