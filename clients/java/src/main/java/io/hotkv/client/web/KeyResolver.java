package io.hotkv.client.web;

import jakarta.servlet.http.HttpServletRequest;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.regex.Pattern;

/**
 * Picks the identity a request is limited under: a client IP, an API key, a user id. Every request
 * with the same key shares one budget. An empty key is a valid key (all such requests share one
 * budget); to exempt requests, make the cost function return 0 for them instead.
 */
@FunctionalInterface
public interface KeyResolver {
  /** The request's key. */
  String resolve(HttpServletRequest request);

  /**
   * Keys requests by client IP address.
   *
   * <p>With no trusted proxies it uses the connection's peer address ({@code getRemoteAddr()})
   * and ignores {@code X-Forwarded-For}, which any client can forge. When the peer is one of the
   * trusted proxies (your load balancers, given as addresses or CIDR prefixes such as {@code
   * 10.0.0.0/8}), the key is the right-most {@code X-Forwarded-For} address that is not trusted:
   * the address your own proxy saw, which a client cannot choose. If every listed address is
   * trusted, the left-most one is used. Addresses are normalised (an IPv4-mapped IPv6 address
   * becomes IPv4, IPv6 is written in its RFC 5952 short form) so one client does not get two
   * budgets, and the keys match those of the Go client's middleware.
   *
   * @throws IllegalArgumentException for a trusted proxy that is not an address or prefix
   */
  static KeyResolver byIp(String... trustedProxies) {
    List<IpAddresses.Prefix> trusted = new ArrayList<>();
    for (String p : trustedProxies) {
      trusted.add(IpAddresses.Prefix.parse(p));
    }
    return request -> IpAddresses.clientKey(request, trusted);
  }

  /**
   * Keys requests by the value of a request header, such as an API key. Requests without the
   * header share the empty key's budget; wrap it to fall back to another key instead.
   */
  static KeyResolver byHeader(String name) {
    return request -> {
      String v = request.getHeader(name);
      return v == null ? "" : v;
    };
  }
}

/** IP parsing and formatting for {@link KeyResolver#byIp}, with no DNS lookups. */
final class IpAddresses {
  private IpAddresses() {}

  private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
  private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]+");

  /** A literal IP address, or null: never a host name, so nothing is ever looked up. */
  static InetAddress parse(String s) {
    if (s == null) {
      return null;
    }
    s = s.trim();
    try {
      if (IPV4.matcher(s).matches()) {
        String[] parts = s.split("\\.");
        byte[] b = new byte[4];
        for (int i = 0; i < 4; i++) {
          int v = Integer.parseInt(parts[i]);
          if (v > 255) {
            return null;
          }
          b[i] = (byte) v;
        }
        return InetAddress.getByAddress(b);
      }
      if (s.indexOf(':') >= 0 && IPV6.matcher(s).matches()) {
        // A literal with ':' is parsed, never resolved. An IPv4-mapped address comes back as
        // an Inet4Address, which is the normalisation we want.
        return InetAddress.getByName(s);
      }
    } catch (UnknownHostException | NumberFormatException e) {
      return null;
    }
    return null;
  }

  /** The address as text: dotted IPv4, or RFC 5952 IPv6 (lower case, longest zero run as ::). */
  static String format(InetAddress a) {
    byte[] b = a.getAddress();
    if (b.length == 4) {
      return a.getHostAddress();
    }
    int[] g = new int[8];
    for (int i = 0; i < 8; i++) {
      g[i] = ((b[2 * i] & 0xff) << 8) | (b[2 * i + 1] & 0xff);
    }
    int bestStart = -1, bestLen = 0;
    for (int i = 0; i < 8; ) {
      if (g[i] != 0) {
        i++;
        continue;
      }
      int j = i;
      while (j < 8 && g[j] == 0) {
        j++;
      }
      if (j - i > bestLen) {
        bestStart = i;
        bestLen = j - i;
      }
      i = j;
    }
    if (bestLen < 2) {
      bestStart = -1;
    }
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        sb.append("::");
        i += bestLen - 1;
        continue;
      }
      if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
        sb.append(':');
      }
      sb.append(Integer.toHexString(g[i]));
    }
    return sb.toString();
  }

  static String clientKey(HttpServletRequest r, List<Prefix> trusted) {
    String host = r.getRemoteAddr();
    // Containers differ on whether an IPv6 peer address comes in brackets.
    if (host != null && host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    InetAddress peer = parse(host);
    if (peer == null) {
      return host == null ? "" : host;
    }
    if (trusted.isEmpty() || !isTrusted(peer, trusted)) {
      return format(peer);
    }
    List<String> hops = new ArrayList<>();
    Enumeration<String> lines = r.getHeaders("X-Forwarded-For");
    while (lines != null && lines.hasMoreElements()) {
      for (String h : lines.nextElement().split(",")) {
        h = h.trim();
        if (!h.isEmpty()) {
          hops.add(h);
        }
      }
    }
    if (hops.isEmpty()) {
      return format(peer);
    }
    for (int i = hops.size() - 1; i >= 0; i--) {
      InetAddress a = parse(hops.get(i));
      if (a == null) {
        // Written by a trusted proxy but not an address: use it as it is rather than skip to
        // entries a client could have forged.
        return hops.get(i);
      }
      if (!isTrusted(a, trusted) || i == 0) {
        return format(a);
      }
    }
    return format(peer); // unreachable: the loop returns at i == 0
  }

  private static boolean isTrusted(InetAddress a, List<Prefix> trusted) {
    for (Prefix p : trusted) {
      if (p.contains(a)) {
        return true;
      }
    }
    return false;
  }

  /** An address prefix such as 10.0.0.0/8 or fd00::/8; a bare address is a full-length prefix. */
  record Prefix(byte[] address, int bits) {
    static Prefix parse(String s) {
      String addr = s;
      int bits = -1;
      int slash = s.indexOf('/');
      if (slash >= 0) {
        addr = s.substring(0, slash);
        try {
          bits = Integer.parseInt(s.substring(slash + 1));
        } catch (NumberFormatException e) {
          throw new IllegalArgumentException("not an IP address or prefix: " + s);
        }
      }
      InetAddress a = IpAddresses.parse(addr);
      if (a == null) {
        throw new IllegalArgumentException("not an IP address or prefix: " + s);
      }
      byte[] b = a.getAddress();
      if (bits < 0) {
        bits = b.length * 8;
      }
      if (bits > b.length * 8) {
        throw new IllegalArgumentException("prefix length out of range: " + s);
      }
      return new Prefix(b, bits);
    }

    boolean contains(InetAddress a) {
      byte[] b = a.getAddress();
      if (b.length != address.length) {
        return false;
      }
      int full = bits / 8;
      for (int i = 0; i < full; i++) {
        if (b[i] != address[i]) {
          return false;
        }
      }
      int rest = bits % 8;
      if (rest == 0) {
        return true;
      }
      int mask = (0xff << (8 - rest)) & 0xff;
      return (b[full] & mask) == (address[full] & mask);
    }
  }
}
