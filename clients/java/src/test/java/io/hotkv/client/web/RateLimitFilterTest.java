package io.hotkv.client.web;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.hotkv.client.Algorithm;
import io.hotkv.client.FrozenClockFixture;
import io.hotkv.client.HotKV;
import io.hotkv.client.RateLimitStats;
import io.hotkv.client.TestServer;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisProtocol;

/**
 * The servlet filter against the real server, with Spring's servlet mocks standing in for the
 * container. These mirror clients/go/httplimit's tests, so both middlewares give the same
 * headers for the same traffic (specification section 12).
 */
class RateLimitFilterTest extends FrozenClockFixture {
  static final String CLIENT = "192.0.2.1";

  RateLimitFilterTest(TestServer server) {
    super(server);
  }

  @BeforeEach
  void setUp() {
    open(RedisProtocol.RESP3);
  }

  static Filter filter(HttpRateLimiter.Builder b) {
    return new RateLimitFilter(b.build());
  }

  /** The application behind the filter: it answers "ok". */
  static final class Ok extends HttpServlet {
    private static final long serialVersionUID = 1L;
    final AtomicReference<Decision> seen = new AtomicReference<>();

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException {
      seen.set(Decision.from(req).orElse(null));
      resp.getWriter().print("ok");
    }
  }

  /** Sends one request from {@code remote} through the filter, with header name/value pairs. */
  static MockHttpServletResponse get(Filter f, String remote, String... headers) {
    return get(f, new Ok(), remote, headers);
  }

  static MockHttpServletResponse get(Filter f, Ok app, String remote, String... headers) {
    MockHttpServletRequest req = new MockHttpServletRequest("GET", "/");
    req.setRemoteAddr(remote);
    for (int i = 0; i + 1 < headers.length; i += 2) {
      req.addHeader(headers[i], headers[i + 1]);
    }
    MockHttpServletResponse resp = new MockHttpServletResponse();
    try {
      f.doFilter(req, resp, new MockFilterChain(app));
    } catch (Exception e) {
      throw new AssertionError(e);
    }
    return resp;
  }

  /** Checks the status and the listed headers; "" means the header must be absent. */
  static void want(MockHttpServletResponse r, int status, String... headers) throws Exception {
    assertEquals(status, r.getStatus(), () -> "status (body " + body(r) + ")");
    for (int i = 0; i + 1 < headers.length; i += 2) {
      String name = headers[i], value = headers[i + 1];
      if (value.isEmpty()) {
        assertFalse(r.containsHeader(name), name + " should be absent, is " + r.getHeader(name));
      } else {
        assertEquals(value, r.getHeader(name), name);
      }
    }
  }

  static String body(MockHttpServletResponse r) {
    try {
      return r.getContentAsString();
    } catch (IOException e) {
      throw new AssertionError(e);
    }
  }

  /** The specification's own example (section 12): V1 and the V4b denial, in both protocols. */
  @EachProtocol
  void gcraHeaders(RedisProtocol protocol) throws Exception {
    open(protocol);
    Filter h = filter(HttpRateLimiter.builder(client).limit(Limit.gcra("api", Duration.ofMinutes(1), 10)));
    MockHttpServletResponse first = get(h, CLIENT);
    want(first, 200,
        "RateLimit-Policy", "\"api\";q=10;w=60",
        "RateLimit", "\"api\";r=9;t=6",
        "Retry-After", "",
        "X-RateLimit-Limit", "");
    assertEquals("ok", body(first));
    for (int i = 0; i < 9; i++) {
      want(get(h, CLIENT), 200);
    }
    MockHttpServletResponse denied = get(h, CLIENT);
    want(denied, 429,
        "Retry-After", "6",
        "RateLimit-Policy", "\"api\";q=10;w=60",
        "RateLimit", "\"api\";r=0;t=6");
    assertEquals("rate limit exceeded\n", body(denied));
    // The state lives in an ordinary key, rl:<name>:<client IP>.
    assertEquals("1700000060000000000", client.jedis().get("rl:api:192.0.2.1"));
    // Another client has its own budget.
    want(get(h, "192.0.2.2"), 200, "RateLimit", "\"api\";r=9;t=6");
    // Waiting Retry-After is enough.
    at(6000);
    want(get(h, CLIENT), 200, "RateLimit", "\"api\";r=0;t=60");
  }

  @Test
  void retryAfterRoundsUp() throws Exception {
    // 3 per second: the fourth request must wait 334 ms, announced as 1 s (V9).
    Filter h = filter(HttpRateLimiter.builder(client).limit(Limit.gcra("s", Duration.ofSeconds(1), 3)).legacyHeaders(true));
    want(get(h, CLIENT), 200, "RateLimit", "\"s\";r=2;t=1", "X-RateLimit-Limit", "3",
        "X-RateLimit-Remaining", "2", "X-RateLimit-Reset", "1");
    get(h, CLIENT);
    get(h, CLIENT);
    want(get(h, CLIENT), 429, "Retry-After", "1", "RateLimit", "\"s\";r=0;t=1",
        "X-RateLimit-Limit", "3", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1");
    // A 1.5 s period is announced as a 2 s window.
    Filter h2 = filter(HttpRateLimiter.builder(client).limit(Limit.gcra("h", Duration.ofMillis(1500), 1)));
    want(get(h2, CLIENT), 200, "RateLimit-Policy", "\"h\";q=1;w=2", "RateLimit", "\"h\";r=0;t=2");
    want(get(h2, CLIENT), 429, "Retry-After", "2");
  }

  @Test
  void namedLimiterHeaders() throws Exception {
    var rl = client.rateLimit();
    rl.create("api", 100, 60_000, null, null, null);
    rl.create("login", 3, 1000, null, null, null);
    rl.create("uploads", 20, 4000, Algorithm.TOKEN_BUCKET, 5.0, null);
    rl.create("half", 2, 1000, Algorithm.TOKEN_BUCKET, 0.5, null);
    rl.create("leaky", 3, 1500, Algorithm.LEAKY_BUCKET, null, null);
    rl.create("odd", 10, 1000, Algorithm.TOKEN_BUCKET, 3.0, null);
    // w: sliding window ceil(window_ms/1000); buckets ceil(limit/rate). RATELIMIT.CHECK has no
    // reset time, so t is omitted while allowed.
    String[][] cases = {
      {"api", "\"api\";q=100;w=60", "\"api\";r=99"},
      {"uploads", "\"uploads\";q=20;w=4", "\"uploads\";r=19"},
      {"half", "\"half\";q=2;w=4", "\"half\";r=1"},
      {"leaky", "\"leaky\";q=3;w=2", "\"leaky\";r=2"},
      {"odd", "\"odd\";q=10;w=4", "\"odd\";r=9"},
    };
    for (String[] c : cases) {
      Filter h = filter(HttpRateLimiter.builder(client).limit(Limit.limiter(c[0])).legacyHeaders(true));
      want(get(h, CLIENT), 200, "RateLimit-Policy", c[1], "RateLimit", c[2], "X-RateLimit-Reset", "");
    }
    // The fourth login in a second waits 1000 ms.
    Filter h = filter(HttpRateLimiter.builder(client).limit(Limit.limiter("login")));
    for (int i = 0; i < 3; i++) {
      want(get(h, CLIENT), 200);
    }
    want(get(h, CLIENT), 429, "Retry-After", "1", "RateLimit", "\"login\";r=0;t=1",
        "RateLimit-Policy", "\"login\";q=3;w=1");
    RateLimitStats st = rl.stats("login");
    assertEquals(3, st.totalAllowed());
    assertEquals(1, st.totalDenied());
    // A dropped and recreated limiter with another limit: the policy is reread.
    rl.drop("login");
    rl.create("login", 5, 2000, null, null, null);
    want(get(h, CLIENT), 200, "RateLimit-Policy", "\"login\";q=5;w=2", "RateLimit", "\"login\";r=4");
  }

  private static long cost(HttpServletRequest r) {
    String v = r.getHeader("X-Cost");
    return v == null ? 0 : Long.parseLong(v);
  }

  @Test
  void cost() throws Exception {
    client.rateLimit().create("api", 10, 60_000, null, null, null);
    Filter h = filter(HttpRateLimiter.builder(client).limit(Limit.gcra("g", Duration.ofMinutes(1), 10)).cost(RateLimitFilterTest::cost));
    want(get(h, CLIENT, "X-Cost", "3"), 200, "RateLimit", "\"g\";r=7;t=18");
    // Cost 0 exempts the request: no check, no headers.
    want(get(h, CLIENT, "X-Cost", "0"), 200, "RateLimit", "", "RateLimit-Policy", "");
    // More than the burst can never pass: 429 without Retry-After, t as when allowed (§12).
    want(get(h, CLIENT, "X-Cost", "11"), 429, "Retry-After", "", "RateLimit", "\"g\";r=0;t=18");
    want(get(h, CLIENT, "X-Cost", "8"), 429, "Retry-After", "6", "RateLimit", "\"g\";r=0;t=6");

    Filter n = filter(HttpRateLimiter.builder(client).limit(Limit.limiter("api")).cost(RateLimitFilterTest::cost));
    want(get(n, CLIENT, "X-Cost", "4"), 200, "RateLimit", "\"api\";r=6");
    MockHttpServletResponse big = get(n, CLIENT, "X-Cost", "11");
    want(big, 429, "Retry-After", "", "RateLimit", "\"api\";r=6");
    assertEquals("request exceeds the rate limit\n", body(big));
    want(get(n, CLIENT, "X-Cost", "7"), 429, "Retry-After", "60", "RateLimit", "\"api\";r=6;t=60");
  }

  /**
   * All limits must allow; a refused request is charged nowhere; header items and Retry-After
   * for several policies.
   */
  @Test
  void severalLimits() throws Exception {
    client.rateLimit().create("hourly", 5, 3_600_000, null, null, null);
    Filter h = filter(HttpRateLimiter.builder(client)
        .limit(Limit.gcra("burst", Duration.ofSeconds(1), 2))
        .limit(Limit.limiter("hourly"))
        .legacyHeaders(true));
    want(get(h, CLIENT), 200,
        "RateLimit-Policy", "\"burst\";q=2;w=1, \"hourly\";q=5;w=3600",
        "RateLimit", "\"burst\";r=1;t=1, \"hourly\";r=4",
        "X-RateLimit-Limit", "2", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "1");
    want(get(h, CLIENT), 200, "RateLimit", "\"burst\";r=0;t=1, \"hourly\";r=3");

    // The GCRA limit refuses: the named limiter is not charged and does not count a denial.
    String tat = client.jedis().get("rl:burst:192.0.2.1");
    want(get(h, CLIENT), 429, "Retry-After", "1",
        "RateLimit", "\"burst\";r=0;t=1, \"hourly\";r=3",
        "X-RateLimit-Limit", "2", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1");
    RateLimitStats st = client.rateLimit().stats("hourly");
    assertEquals(2, st.totalAllowed());
    assertEquals(0, st.totalDenied());
    assertEquals(tat, client.jedis().get("rl:burst:192.0.2.1"));

    // Three more requests, a second apart, use up the hourly limit.
    for (int i = 1; i <= 3; i++) {
      at(1000L * i);
      want(get(h, CLIENT), 200);
    }
    // Now the named limiter refuses and the GCRA limit would allow: the GCRA key is untouched,
    // the refusal is counted in total_denied, and Retry-After is the limiter's wait.
    at(10_000);
    tat = client.jedis().get("rl:burst:192.0.2.1");
    want(get(h, CLIENT), 429, "Retry-After", "3590",
        "RateLimit", "\"burst\";r=2;t=1, \"hourly\";r=0;t=3590",
        "X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "3590");
    assertEquals(tat, client.jedis().get("rl:burst:192.0.2.1"));
    st = client.rateLimit().stats("hourly");
    assertEquals(5, st.totalAllowed());
    assertEquals(1, st.totalDenied());

    // Both refuse: Retry-After is the longest wait.
    get(h, "192.0.2.9");
    get(h, "192.0.2.9");
    Filter both = filter(HttpRateLimiter.builder(client)
        .limit(Limit.gcra("burst", Duration.ofSeconds(1), 2))
        .limit(Limit.limiter("hourly").withKey(r -> "192.0.2.1")));
    want(get(both, "192.0.2.9"), 429, "Retry-After", "3590",
        "RateLimit", "\"burst\";r=0;t=1, \"hourly\";r=0;t=3590");
  }

  /**
   * With a cost above 1 a named limiter is decided by its remaining units (RATELIMIT.PEEK answers
   * for one unit), and its Retry-After is the exact wait for that cost.
   */
  @Test
  void severalLimitsCost() throws Exception {
    client.rateLimit().create("w", 10, 10_000, null, null, null);
    Filter h = filter(HttpRateLimiter.builder(client)
        .limit(Limit.gcra("g", Duration.ofMinutes(1), 100))
        .limit(Limit.limiter("w"))
        .cost(RateLimitFilterTest::cost));
    want(get(h, CLIENT, "X-Cost", "4"), 200, "RateLimit", "\"g\";r=96;t=3, \"w\";r=6");
    at(5000);
    want(get(h, CLIENT, "X-Cost", "5"), 200, "RateLimit", "\"g\";r=95;t=3, \"w\";r=1");
    at(6000);
    want(get(h, CLIENT, "X-Cost", "2"), 429, "Retry-After", "4", "RateLimit", "\"g\";r=96;t=4, \"w\";r=1;t=4");
    want(get(h, CLIENT, "X-Cost", "6"), 429, "Retry-After", "9", "RateLimit", "\"g\";r=96;t=6, \"w\";r=1;t=9");
    // A cost above the limiter's limit is too large: no Retry-After, no t for it.
    want(get(h, CLIENT, "X-Cost", "11"), 429, "Retry-After", "", "RateLimit", "\"g\";r=96;t=9, \"w\";r=1");
    RateLimitStats st = client.rateLimit().stats("w");
    assertEquals(9, st.totalAllowed());
    assertEquals(19, st.totalDenied());
    assertEquals("1700000008000000000", client.jedis().get("rl:g:192.0.2.1"), "refused requests were charged");
  }

  @Test
  void failOpenAndClosed() throws Exception {
    int dead = TestServer.freePort(); // nobody listens there
    try (HotKV down = new HotKV(RedisClient.builder()
        .hostAndPort(new HostAndPort("127.0.0.1", dead))
        .clientConfig(DefaultJedisClientConfig.builder().connectionTimeoutMillis(200).socketTimeoutMillis(200).build())
        .build())) {
      Limit api = Limit.gcra("api", Duration.ofMinutes(1), 10);
      List<RuntimeException> seen = new ArrayList<>();
      Filter open = filter(HttpRateLimiter.builder(down).limit(api).failOpen(true).onError((r, e) -> seen.add(e)));
      want(get(open, CLIENT), 200, "RateLimit", "", "RateLimit-Policy", "");
      Filter closed = filter(HttpRateLimiter.builder(down).limit(api).onError((r, e) -> seen.add(e)));
      MockHttpServletResponse r = get(closed, CLIENT);
      want(r, 503, "RateLimit", "");
      assertEquals("rate limiter unavailable\n", body(r));
      assertEquals(2, seen.size(), seen::toString);
      Filter custom = filter(HttpRateLimiter.builder(down).limit(api).errorHandler((req, resp, e) -> resp.setStatus(418)));
      want(get(custom, CLIENT), 418);
    }
    // An unknown limiter is a configuration error, handled the same way (the server's all-zero
    // reply would otherwise refuse everything).
    AtomicReference<RuntimeException> got = new AtomicReference<>();
    Filter unknown = filter(HttpRateLimiter.builder(client).limit(Limit.limiter("missing")).onError((r, e) -> got.set(e)));
    want(get(unknown, CLIENT), 503);
    assertInstanceOf(UnknownLimiterException.class, got.get());
    Filter both = filter(HttpRateLimiter.builder(client)
        .limit(Limit.gcra("api", Duration.ofMinutes(1), 10))
        .limit(Limit.limiter("missing"))
        .failOpen(true));
    want(get(both, CLIENT), 200, "RateLimit", "");
  }

  @Test
  void keyResolvers() throws Exception {
    KeyResolver byIp = KeyResolver.byIp("10.0.0.0/8", "::1/128");
    String[][] cases = {
      {"192.0.2.1", null, "192.0.2.1"},
      // An untrusted peer's X-Forwarded-For is ignored.
      {"192.0.2.1", "198.51.100.7", "192.0.2.1"},
      // Behind a trusted proxy: the right-most untrusted address.
      {"10.0.0.2", "203.0.113.5, 198.51.100.7", "198.51.100.7"},
      {"10.0.0.2", "203.0.113.5, 198.51.100.7, 10.0.0.9", "198.51.100.7"},
      {"10.0.0.2", "203.0.113.5|198.51.100.7, 10.0.0.9", "198.51.100.7"},
      {"10.0.0.2", "10.1.1.1, 10.0.0.9", "10.1.1.1"},
      {"10.0.0.2", null, "10.0.0.2"},
      {"0:0:0:0:0:0:0:1", "[2001:db8::1]", "[2001:db8::1]"},
      {"[::1]", "2001:db8::1", "2001:db8::1"},
      {"::1", "2001:DB8:0:0:1:0:0:1", "2001:db8::1:0:0:1"},
      {"::ffff:192.0.2.1", null, "192.0.2.1"},
      {"10.0.0.2", "::ffff:198.51.100.7", "198.51.100.7"},
      {"10.0.0.2", "not-an-ip, 10.0.0.7", "not-an-ip"},
      // Untrusted IPv6 peers in RFC 5952 form, as Go's netip writes them.
      {"2001:DB8:0:0:0:0:0:1", "198.51.100.7", "2001:db8::1"},
      {"[fe80:0:0:1:0:0:0:0]", null, "fe80:0:0:1::"},
      {"1:0:2:0:3:0:4:0", null, "1:0:2:0:3:0:4:0"},
    };
    for (String[] c : cases) {
      MockHttpServletRequest req = new MockHttpServletRequest();
      req.setRemoteAddr(c[0]);
      if (c[1] != null) {
        for (String line : c[1].split("\\|")) {
          req.addHeader("X-Forwarded-For", line);
        }
      }
      assertEquals(c[2], byIp.resolve(req), () -> "byIp(" + c[0] + ", " + c[1] + ")");
    }
    // Without trusted proxies X-Forwarded-For is never read.
    MockHttpServletRequest req = new MockHttpServletRequest();
    req.setRemoteAddr("10.0.0.2");
    req.addHeader("X-Forwarded-For", "198.51.100.7");
    assertEquals("10.0.0.2", KeyResolver.byIp().resolve(req));
    assertThrows(IllegalArgumentException.class, () -> KeyResolver.byIp("example.com"));
    assertThrows(IllegalArgumentException.class, () -> KeyResolver.byIp("10.0.0.0/33"));

    // byHeader and a per-limit key, end to end.
    Filter h = filter(HttpRateLimiter.builder(client)
        .key(KeyResolver.byHeader("X-API-Key"))
        .limit(Limit.gcra("key", Duration.ofMinutes(1), 10))
        .limit(Limit.gcra("ip", Duration.ofMinutes(1), 100).withKey(KeyResolver.byIp()).withPrefix("ip-limit:")));
    want(get(h, CLIENT, "X-API-Key", "k1"), 200, "RateLimit", "\"key\";r=9;t=6, \"ip\";r=99;t=1");
    want(get(h, "192.0.2.2", "X-API-Key", "k1"), 200, "RateLimit", "\"key\";r=8;t=12, \"ip\";r=99;t=1");
    for (String k : List.of("rl:key:k1", "ip-limit:192.0.2.1", "ip-limit:192.0.2.2")) {
      assertTrue(client.jedis().exists(k), k);
    }
  }

  @Test
  void deniedHandlerAndDecision() throws Exception {
    Filter h = filter(HttpRateLimiter.builder(client)
        .limit(Limit.gcra("api", Duration.ofMinutes(1), 1).withPolicy("my \"api\""))
        .deniedHandler((req, resp, d) -> {
          resp.setStatus(429);
          resp.getWriter().print("wait " + d.retryAfter() + "s (" + d.results().get(0).allowed() + ")");
        }));
    Ok app = new Ok();
    want(get(h, app, CLIENT), 200, "RateLimit-Policy", "\"my \\\"api\\\"\";q=1;w=60");
    Decision seen = app.seen.get();
    assertNotNull(seen);
    assertTrue(seen.allowed());
    assertEquals(new LimitResult("my \"api\"", true, false, 1, 60, 0, 60, 0), seen.results().get(0));
    Ok app2 = new Ok();
    MockHttpServletResponse r = get(h, app2, CLIENT);
    want(r, 429, "Retry-After", "60");
    assertEquals("wait 60s (false)", body(r));
    assertNull(app2.seen.get(), "the application must not run for a refused request");
  }

  @Test
  void configurationErrors() {
    List<HttpRateLimiter.Builder> bad = List.of(
        HttpRateLimiter.builder(client),
        HttpRateLimiter.builder(client).limit(Limit.gcra("", Duration.ofMinutes(1), 1)),
        HttpRateLimiter.builder(client).limit(Limit.gcra("a", Duration.ofMinutes(1), 1)).limit(Limit.limiter("a")),
        HttpRateLimiter.builder(client).limit(Limit.gcra("a", Duration.ofNanos(1000), 1)),
        HttpRateLimiter.builder(client).limit(Limit.gcra("a", Duration.ofMinutes(1), 0)),
        HttpRateLimiter.builder(client).limit(Limit.limiter("bad\nname")));
    for (HttpRateLimiter.Builder b : bad) {
      assertThrows(IllegalArgumentException.class, b::build);
    }
    assertThrows(NullPointerException.class, () -> HttpRateLimiter.builder(null));
  }

  @Test
  void helpers() {
    assertEquals(0, HttpRateLimiter.ceilSec(0));
    assertEquals(1, HttpRateLimiter.ceilSec(1));
    assertEquals(1, HttpRateLimiter.ceilSec(1000));
    assertEquals(2, HttpRateLimiter.ceilSec(1001));
    assertEquals(4, HttpRateLimiter.ceilDiv(20, 5));
    assertEquals(4, HttpRateLimiter.ceilDiv(10, 2.5));
    assertEquals(4, HttpRateLimiter.ceilDiv(10, 3));
    assertEquals(3, HttpRateLimiter.ceilDiv(3, 1.0));
    assertEquals(10, HttpRateLimiter.ceilDiv(1, 0.1));
    assertEquals("\"a\\\"b\\\\c\"", HttpRateLimiter.quote("a\"b\\c"));
  }
}
