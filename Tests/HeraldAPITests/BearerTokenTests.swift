import HTTPTypes
import Testing

@testable import HeraldAPI

/// How a key is read from a request's `Authorization` header.
@Suite("bearer token")
struct BearerTokenTests {
    private func token(_ value: String?) -> String? {
        var headers = HTTPFields()
        if let value { headers[.authorization] = value }
        return AuthenticationGate<APIRequestContext>.bearerToken(headers).map(String.init)
    }

    @Test("the scheme in any case; the token without the blanks around it")
    func read() {
        #expect(token("Bearer hk_live_abc") == "hk_live_abc")
        #expect(token("bearer hk_live_abc") == "hk_live_abc")
        #expect(token("BEARER hk_live_abc") == "hk_live_abc")
        #expect(token("Bearer   hk_live_abc \t") == "hk_live_abc")
        #expect(token("Bearer a b") == "a b")
    }

    @Test("no header, another scheme, a short header or no token: none")
    func refused() {
        #expect(token(nil) == nil)
        #expect(token("Basic dXNlcjpwYXNz") == nil)
        #expect(token("Bearer") == nil)
        #expect(token("Bearer ") == nil)
        #expect(token("Bearer  \t ") == nil)
        #expect(token("Bearerhk_live_abc") == nil)
        #expect(token("B\u{e9}arer hk") == nil)
        #expect(token("bearer\thk") == nil)
    }
}
