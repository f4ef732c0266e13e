import CNGHTTP2
import Testing

@testable import HeraldHTTP2

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@Suite("nghttp2's per-session memory pool")
struct NGHTTP2MemoryPoolTests {
    @Test("sizes go to the smallest class that holds them; above the largest, to the system")
    func sizeClasses() {
        #expect(NGHTTP2MemoryPool.sizeClass(for: 0) == 0)
        #expect(NGHTTP2MemoryPool.sizeClass(for: 64) == 0)
        #expect(NGHTTP2MemoryPool.sizeClass(for: 65) == 1)
        #expect(NGHTTP2MemoryPool.sizeClass(for: 128) == 1)
        #expect(NGHTTP2MemoryPool.sizeClass(for: 129) == 2)
        #expect(NGHTTP2MemoryPool.sizeClass(for: 16384) == NGHTTP2MemoryPool.classSizes.count - 1)
        #expect(NGHTTP2MemoryPool.sizeClass(for: 16385) == nil)
        for size in 1...20000 {
            guard let sizeClass = NGHTTP2MemoryPool.sizeClass(for: size) else { continue }
            let holds = NGHTTP2MemoryPool.classSizes[sizeClass]
            #expect(holds >= size && (sizeClass == 0 || NGHTTP2MemoryPool.classSizes[sizeClass - 1] < size))
        }
    }

    @Test("blocks through nghttp2's callbacks: written in full, kept by realloc, reused once freed")
    func callbacks() throws {
        let pool = NGHTTP2MemoryPool()
        let memory = pool.allocator
        let userData = memory.mem_user_data
        var blocks: [(pointer: UnsafeMutableRawPointer, size: Int, fill: UInt8)] = []
        for (index, size) in [1, 64, 65, 300, 4096, 16384, 16385, 100_000].enumerated() {
            let block = try #require(memory.malloc(size, userData))
            memset(block, Int32(index + 1), size)
            blocks.append((block, size, UInt8(index + 1)))
        }
        // calloc zeroes; realloc keeps the bytes, growing and across the largest class.
        let zeroed = try #require(memory.calloc(10, 30, userData))
        #expect(UnsafeRawBufferPointer(start: zeroed, count: 300).allSatisfy { $0 == 0 })
        memory.free(zeroed, userData)
        var grown = try #require(memory.realloc(nil, 10, userData))
        memset(grown, 7, 10)
        for size in [60, 200, 5000, 40000] {
            grown = try #require(memory.realloc(grown, size, userData))
            #expect(UnsafeRawBufferPointer(start: grown, count: 10).allSatisfy { $0 == 7 })
            memset(grown + 10, 7, size - 10)
        }
        memory.free(grown, userData)
        for block in blocks {
            #expect(UnsafeRawBufferPointer(start: block.pointer, count: block.size).allSatisfy { $0 == block.fill })
        }
        // A freed block of a class is the next one that class hands out.
        let freed = blocks[3].pointer
        memory.free(freed, userData)
        let again = try #require(memory.malloc(400, userData))
        #expect(again == freed)
        memory.free(again, userData)
        for block in blocks where block.pointer != freed { memory.free(block.pointer, userData) }
        memory.free(nil, userData)
    }
}
