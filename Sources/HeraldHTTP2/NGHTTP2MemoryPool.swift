import CNGHTTP2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The memory of one nghttp2 session: blocks of a few size classes that a freed request's
/// structures give back and the next request's take again, instead of `malloc` and `free` for
/// each. nghttp2 allocates several small blocks per stream (the stream, its outbound item, a
/// copy of the header fields, the received header buffers); under `make bench-sender` glibc's
/// `malloc` and `free` were 12% of herald-sender's CPU, about 8 calls per notification of them
/// nghttp2's.
///
/// Not thread-safe, as the session is not: nghttp2 calls it only inside the session's calls,
/// made on one event loop. Each block carries a 16-byte header with its size class (or, above
/// the largest class, its size), so `free` and `realloc` know where it goes. Each class keeps at
/// most ``cachedBytesPerClass`` of freed blocks (1 MB: a connection with a thousand streams in
/// flight cycles about 6,000 blocks of 64 to 512 bytes — at 256 KB the 512-byte class, each
/// request's copy of its header fields, overflowed and went back to `malloc` for every other
/// request), the rest go back to the system allocator; so a session holds at most 9 MB it does
/// not use, and typically one to two.
final class NGHTTP2MemoryPool {
    /// Block sizes (what nghttp2 may use of a block), smallest first.
    static let classSizes = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    /// Freed blocks kept per class, in bytes.
    static let cachedBytesPerClass = 1 << 20
    static let headerSize = 16

    /// The free lists, `classSizes.count` heads then as many counts, where nghttp2's callbacks
    /// find them through `mem_user_data`. Allocated in `init`, released in `deinit`.
    private let lists: UnsafeMutablePointer<Int>

    /// What the session is created with; valid while this pool lives (nghttp2 copies the struct
    /// and keeps its `mem_user_data` pointer, to `lists`, until the session is deleted — which its
    /// owner does before it releases the pool).
    var allocator: nghttp2_mem {
        nghttp2_mem(
            mem_user_data: UnsafeMutableRawPointer(lists), malloc: poolMalloc, free: poolFree, calloc: poolCalloc,
            realloc: poolRealloc)
    }

    init() {
        lists = .allocate(capacity: 2 * Self.classSizes.count)
        lists.initialize(repeating: 0, count: 2 * Self.classSizes.count)
    }

    deinit {
        for sizeClass in Self.classSizes.indices {
            var block = UnsafeMutableRawPointer(bitPattern: lists[sizeClass])
            while let current = block {
                block = current.load(fromByteOffset: Self.headerSize, as: UnsafeMutableRawPointer?.self)
                free(current)
            }
        }
        lists.deallocate()
    }

    /// The smallest class of at least `size` bytes, or nil above the largest.
    @inline(__always)
    static func sizeClass(for size: Int) -> Int? {
        if size <= 64 { return 0 }
        guard size <= 16384 else { return nil }
        // 65...128 → 1, 129...256 → 2, …: the bit length of size - 1, less 6.
        return (Int.bitWidth - (size - 1).leadingZeroBitCount) - 6
    }

    static func allocate(_ size: Int, lists: UnsafeMutablePointer<Int>) -> UnsafeMutableRawPointer? {
        guard let sizeClass = sizeClass(for: size) else {
            guard let block = malloc(headerSize + size) else { return nil }
            block.storeBytes(of: -1, as: Int.self)
            block.storeBytes(of: size, toByteOffset: 8, as: Int.self)
            return block + headerSize
        }
        if let block = UnsafeMutableRawPointer(bitPattern: lists[sizeClass]) {
            lists[sizeClass] = Int(
                bitPattern: block.load(fromByteOffset: headerSize, as: UnsafeMutableRawPointer?.self))
            lists[classSizes.count + sizeClass] -= 1
            return block + headerSize
        }
        guard let block = malloc(headerSize + classSizes[sizeClass]) else { return nil }
        block.storeBytes(of: sizeClass, as: Int.self)
        return block + headerSize
    }

    static func release(_ pointer: UnsafeMutableRawPointer, lists: UnsafeMutablePointer<Int>) {
        let block = pointer - headerSize
        let sizeClass = block.load(as: Int.self)
        guard sizeClass >= 0, lists[classSizes.count + sizeClass] * classSizes[sizeClass] < cachedBytesPerClass else {
            free(block)
            return
        }
        pointer.storeBytes(of: UnsafeMutableRawPointer(bitPattern: lists[sizeClass]), as: UnsafeMutableRawPointer?.self)
        lists[sizeClass] = Int(bitPattern: block)
        lists[classSizes.count + sizeClass] += 1
    }

    /// How many bytes the block at `pointer` holds.
    static func capacity(of pointer: UnsafeMutableRawPointer) -> Int {
        let block = pointer - headerSize
        let sizeClass = block.load(as: Int.self)
        return sizeClass >= 0 ? classSizes[sizeClass] : block.load(fromByteOffset: 8, as: Int.self)
    }
}

// nghttp2's allocator callbacks: C functions, so they reach the pool through `mem_user_data`.

private func poolMalloc(_ size: Int, _ userData: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    NGHTTP2MemoryPool.allocate(size, lists: userData!.assumingMemoryBound(to: Int.self))
}

private func poolFree(_ pointer: UnsafeMutableRawPointer?, _ userData: UnsafeMutableRawPointer?) {
    guard let pointer else { return }
    NGHTTP2MemoryPool.release(pointer, lists: userData!.assumingMemoryBound(to: Int.self))
}

private func poolCalloc(_ count: Int, _ size: Int, _ userData: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    let (bytes, overflow) = count.multipliedReportingOverflow(by: size)
    guard !overflow, let block = NGHTTP2MemoryPool.allocate(bytes, lists: userData!.assumingMemoryBound(to: Int.self))
    else { return nil }
    memset(block, 0, bytes)
    return block
}

private func poolRealloc(_ pointer: UnsafeMutableRawPointer?, _ size: Int, _ userData: UnsafeMutableRawPointer?)
    -> UnsafeMutableRawPointer?
{
    let lists = userData!.assumingMemoryBound(to: Int.self)
    guard let pointer else { return NGHTTP2MemoryPool.allocate(size, lists: lists) }
    let capacity = NGHTTP2MemoryPool.capacity(of: pointer)
    if size <= capacity { return pointer }
    guard let moved = NGHTTP2MemoryPool.allocate(size, lists: lists) else { return nil }
    moved.copyMemory(from: pointer, byteCount: min(capacity, size))
    NGHTTP2MemoryPool.release(pointer, lists: lists)
    return moved
}
