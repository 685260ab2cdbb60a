package io.hotkv.client.web;

import static io.hotkv.client.web.RateLimitFilterTest.want;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;

import io.hotkv.client.Algorithm;
import io.hotkv.client.FrozenClockFixture;
import io.hotkv.client.HotKV;
import io.hotkv.client.RateLimitStats;
import io.hotkv.client.TestServer;
import jakarta.servlet.AsyncContext;
import jakarta.servlet.Filter;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.setup.MockMvcBuilders;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import redis.clients.jedis.RedisProtocol;

/**
 * Concurrency limiters behind the servlet filter and the Spring MVC interceptor, against the real
 * server: a request holds its lease while the application runs and gives it back when it is done
 * (also when the application throws, when the request went asynchronous and completes, and when
 * another limit refused it), as clients/go/httplimit's TestConcurrencyLimiter checks.
 */
class ConcurrencyLimiterTest extends FrozenClockFixture {
  static final String CLIENT = "192.0.2.1";

  ConcurrencyLimiterTest(TestServer server) {
    super(server);
  }

  @BeforeEach
  void setUp() {
    open(RedisProtocol.RESP3);
  }

  /** Every test here starts with one concurrency limiter, "inflight", of a single lease. */
  @Override
  protected HotKV open(RedisProtocol protocol) {
    HotKV c = super.open(protocol);
    c.rateLimit().create("inflight", 1, Duration.ofMinutes(1), Algorithm.CONCURRENCY, null, null);
    return c;
  }

  private long inFlight() {
    return client.rateLimit().peek("inflight", CLIENT).current();
  }

  /** An application that records how many leases were held while it ran. */
  final class App extends HttpServlet {
    private static final long serialVersionUID = 1L;
    final List<Long> seen = new ArrayList<>();
    CountDownLatch entered;
    CountDownLatch leave;
    boolean fail;
    boolean async;
    final AtomicReference<AsyncContext> started = new AtomicReference<>();

    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp) throws IOException, ServletException {
      seen.add(inFlight());
      if (entered != null) {
        entered.countDown();
        try {
          leave.await(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          throw new ServletException(e);
        }
      }
      if (fail) {
        throw new ServletException("handler failed");
      }
      if (async) {
        started.set(req.startAsync());
        return;
      }
      resp.getWriter().print("ok");
    }
  }

  private static MockHttpServletResponse send(Filter f, App app) throws IOException, ServletException {
    MockHttpServletRequest req = new MockHttpServletRequest("GET", "/");
    req.setRemoteAddr(CLIENT);
    req.setAsyncSupported(true);
    MockHttpServletResponse resp = new MockHttpServletResponse();
    f.doFilter(req, resp, new MockFilterChain(app));
    return resp;
  }

  @EachProtocol
  void filterReleasesTheLease(RedisProtocol protocol) throws Exception {
    open(protocol);
    Filter f = new RateLimitFilter(HttpRateLimiter.builder(client).limit(Limit.limiter("inflight")).build());
    App app = new App();
    app.entered = new CountDownLatch(1);
    app.leave = new CountDownLatch(1);
    CompletableFuture<MockHttpServletResponse> slow = CompletableFuture.supplyAsync(() -> {
      try {
        return send(f, app);
      } catch (Exception e) {
        throw new AssertionError(e);
      }
    });
    try {
      app.entered.await(10, TimeUnit.SECONDS);
      // The slow request holds the only slot.
      App other = new App();
      want(send(f, other), 429, "RateLimit", "\"inflight\";r=0;t=60", "Retry-After", "60");
      assertEquals(List.of(), other.seen);
    } finally {
      app.leave.countDown();
    }
    want(slow.get(10, TimeUnit.SECONDS), 200, "RateLimit", "\"inflight\";r=0");
    assertEquals(List.of(1L), app.seen);
    // Released when the chain returned.
    assertEquals(0, inFlight());

    // An application that throws: released all the same.
    App failing = new App();
    failing.fail = true;
    assertThrows(ServletException.class, () -> send(f, failing));
    assertEquals(List.of(1L), failing.seen);
    assertEquals(0, inFlight());

    // An async request: held until its async processing completes.
    App async = new App();
    async.async = true;
    want(send(f, async), 200);
    assertEquals(1, inFlight());
    async.started.get().complete();
    assertEquals(0, inFlight());

    RateLimitStats st = client.rateLimit().stats("inflight");
    assertEquals(3, st.totalAllowed());
    assertEquals(1, st.totalDenied());
  }

  @Test
  void refusedByAnotherLimitKeepsNothing() throws Exception {
    List<RuntimeException> errors = new ArrayList<>();
    Filter f = new RateLimitFilter(HttpRateLimiter.builder(client)
        .limit(Limit.gcra("burst", Duration.ofMinutes(1), 1))
        .limit(Limit.limiter("inflight"))
        .onError((r, e) -> errors.add(e))
        .build());
    want(send(f, new App()), 200);
    want(send(f, new App()), 429);
    assertEquals(0, inFlight());
    assertEquals(List.of(), errors);
    RateLimitStats st = client.rateLimit().stats("inflight");
    assertEquals(1, st.totalAllowed());
  }

  @RestController
  class Api {
    @GetMapping("/work")
    String work() {
      return "held " + inFlight();
    }

    @GetMapping("/boom")
    String boom() {
      throw new IllegalStateException("handler failed");
    }
  }

  @Test
  void interceptorReleasesInAfterCompletion() throws Exception {
    MockMvc mvc = MockMvcBuilders.standaloneSetup(new Api())
        .addInterceptors(new RateLimitInterceptor(HttpRateLimiter.builder(client).limit(Limit.limiter("inflight")).build()))
        .build();
    for (int i = 0; i < 3; i++) {
      MockHttpServletResponse r = mvc.perform(get("/work").with(req -> {
        req.setRemoteAddr(CLIENT);
        return req;
      })).andReturn().getResponse();
      want(r, 200, "RateLimit", "\"inflight\";r=0");
      assertEquals("held 1", r.getContentAsString());
      assertEquals(0, inFlight());
    }
    // A handler that throws: afterCompletion still runs.
    assertThrows(Exception.class, () -> mvc.perform(get("/boom").with(req -> {
      req.setRemoteAddr(CLIENT);
      return req;
    })));
    assertEquals(0, inFlight());
    assertEquals(4, client.rateLimit().stats("inflight").totalAllowed());
  }
}
