package io.hotkv.client.web;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static io.hotkv.client.web.RateLimitFilterTest.body;
import static io.hotkv.client.web.RateLimitFilterTest.want;

import io.hotkv.client.FrozenClockFixture;
import io.hotkv.client.HotKV;
import io.hotkv.client.TestServer;
import jakarta.servlet.http.HttpServletRequest;
import java.time.Duration;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.RequestBuilder;
import org.springframework.test.web.servlet.request.RequestPostProcessor;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisProtocol;

/**
 * The Spring MVC interceptor in a real DispatcherServlet (MockMvc standalone setup: Spring MVC
 * without a container or application context) against the real server.
 */
class RateLimitInterceptorTest extends FrozenClockFixture {
  RateLimitInterceptorTest(TestServer server) {
    super(server);
  }

  @RestController
  static class Api {
    @GetMapping("/hello")
    String hello(HttpServletRequest request) {
      // The decision is available to the handler.
      return "hello, " + Decision.from(request).map(d -> d.results().get(0).remaining() + " left").orElse("?");
    }
  }

  @BeforeEach
  void setUp() {
    open(RedisProtocol.RESP2);
  }

  private static MockMvc mvc(HttpRateLimiter limiter) {
    return MockMvcBuilders.standaloneSetup(new Api())
        .addInterceptors(new RateLimitInterceptor(limiter))
        .build();
  }

  /** Runs a request through the DispatcherServlet; the assertions use the filter test's want(). */
  private static MockHttpServletResponse perform(MockMvc mvc, RequestBuilder request) throws Exception {
    return mvc.perform(request).andReturn().getResponse();
  }

  private static RequestPostProcessor from(String ip) {
    return r -> {
      r.setRemoteAddr(ip);
      return r;
    };
  }

  @Test
  void gcraLimit() throws Exception {
    MockMvc mvc = mvc(HttpRateLimiter.builder(client).limit(Limit.gcra("api", Duration.ofMinutes(1), 2)).build());
    MockHttpServletResponse r = perform(mvc, get("/hello").with(from("192.0.2.1")));
    want(r, 200,
        "RateLimit-Policy", "\"api\";q=2;w=60",
        "RateLimit", "\"api\";r=1;t=30",
        "Retry-After", "");
    assertEquals("hello, 1 left", body(r));
    want(perform(mvc, get("/hello").with(from("192.0.2.1"))), 200);
    r = perform(mvc, get("/hello").with(from("192.0.2.1")));
    want(r, 429, "Retry-After", "30", "RateLimit", "\"api\";r=0;t=30");
    assertEquals("rate limit exceeded\n", body(r));
    // Another client address has its own budget.
    want(perform(mvc, get("/hello").with(from("192.0.2.2"))), 200, "RateLimit", "\"api\";r=1;t=30");
  }

  @Test
  void namedLimiterWithCost() throws Exception {
    client.rateLimit().create("api", 10, 60_000, null, null, null);
    MockMvc mvc = mvc(HttpRateLimiter.builder(client)
        .limit(Limit.limiter("api"))
        .key(KeyResolver.byHeader("X-API-Key"))
        .cost(r -> r.getHeader("X-Cost") == null ? 1 : Long.parseLong(r.getHeader("X-Cost")))
        .build());
    want(perform(mvc, get("/hello").header("X-API-Key", "k").header("X-Cost", "6")), 200,
        "RateLimit-Policy", "\"api\";q=10;w=60", "RateLimit", "\"api\";r=4");
    want(perform(mvc, get("/hello").header("X-API-Key", "k").header("X-Cost", "5")), 429,
        "Retry-After", "60", "RateLimit", "\"api\";r=4;t=60");
    assertEquals(6, client.rateLimit().stats("api").totalAllowed());
    assertEquals(5, client.rateLimit().stats("api").totalDenied());
  }

  @Test
  void failClosedAndOpen() throws Exception {
    try (HotKV down = new HotKV(RedisClient.builder()
        .hostAndPort(new HostAndPort("127.0.0.1", TestServer.freePort()))
        .clientConfig(DefaultJedisClientConfig.builder().connectionTimeoutMillis(200).socketTimeoutMillis(200).build())
        .build())) {
      Limit api = Limit.gcra("api", Duration.ofMinutes(1), 2);
      want(perform(mvc(HttpRateLimiter.builder(down).limit(api).build()), get("/hello")), 503, "RateLimit", "");
      MockHttpServletResponse r = perform(mvc(HttpRateLimiter.builder(down).limit(api).failOpen(true).build()), get("/hello"));
      want(r, 200, "RateLimit", "");
      assertEquals("hello, ?", body(r));
    }
  }
}
