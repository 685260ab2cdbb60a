# Writes vectors.json: the test vectors of ../../../shared/spec/RATELIMIT.md (3.5, 4, 5, 6.6, 8.9),
# transcribed once here, for every client to run through its typed API (see the file's _comment).
# Run it after changing a vector: python3 clients/testdata/gen_vectors.py
import json, os
T0 = 1700000000000
cases = []
def case(name, spec, steps, config=None):
    c = {"name": name, "spec": spec, "steps": steps}
    if config: c["config"] = config
    cases.append(c)

def g(denied, limit, rem, retry, reset):
    return {"denied": bool(denied), "limit": limit, "remaining": rem, "retry_after_ms": retry, "reset_after_ms": reset}
def th(limited, limit, rem, retry, reset):
    return {"limited": bool(limited), "limit": limit, "remaining": rem, "retry_after_s": retry, "reset_after_s": reset}
def rl(allowed, rem, retry, limit, cur):
    return {"allowed": bool(allowed), "remaining": rem, "retry_after_ms": retry, "limit": limit, "current": cur}

def gl(at, key, period, burst, count=None, expect=None, error=None, op="gcra_limit"):
    a = {"key": key, "period_ms": period, "burst": burst}
    if count is not None: a["count"] = count
    s = {"at": at, "op": op, "args": a}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def gp(*a, **k): return gl(*a, op="gcra_peek", **k)
def raw(at, cmd, expect=None, error=None):
    s = {"at": at, "op": "raw", "cmd": [str(x) for x in cmd]}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def reset(at, keys, expect=None, error=None):
    s = {"at": at, "op": "gcra_reset", "args": {"keys": keys}}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def cl(at, key, burst, count, period, qty=None, expect=None, error=None):
    a = {"key": key, "max_burst": burst, "count_per_period": count, "period_s": period}
    if qty is not None: a["quantity"] = qty
    s = {"at": at, "op": "cl_throttle", "args": a}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def create(at, name, limit, window, algo=None, refill=None, drain=None, expect="OK", error=None):
    a = {"name": name, "limit": limit, "window_ms": window}
    if algo: a["algo"] = algo
    if refill is not None: a["refill"] = refill
    if drain is not None: a["drain"] = drain
    s = {"at": at, "op": "ratelimit_create", "args": a}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def check(at, name, key, cost=None, expect=None, error=None, op="ratelimit_check"):
    a = {"name": name, "key": key}
    if cost is not None: a["cost"] = cost
    s = {"at": at, "op": op, "args": a}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def peek(at, name, key, expect=None, error=None): return check(at, name, key, expect=expect, error=error, op="ratelimit_peek")
def rlreset(at, name, key, expect=None, error=None):
    s = {"at": at, "op": "ratelimit_reset", "args": {"name": name, "key": key}}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def stats(at, name, expect=None, error=None):
    s = {"at": at, "op": "ratelimit_stats", "args": {"name": name}}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def drop(at, name, expect="OK", error=None):
    s = {"at": at, "op": "ratelimit_drop", "args": {"name": name}}
    if error: s["error"] = error
    else: s["expect"] = expect
    return s
def lst(at, expect): return {"at": at, "op": "ratelimit_list", "args": {}, "expect": expect}

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"
EPERIOD = "ERR invalid period: must be a positive integer (milliseconds)"
EBURST = "ERR invalid burst: must be a positive integer"
ECOUNT = "ERR invalid count: must be a positive integer"
EINT = "ERR value is not an integer or out of range"
EZERO = "ERR zero rates are not supported"
ENOTFOUND = "ERR limiter not found"
EEXISTS = "ERR limiter already exists or limit reached"

# ---- GCRA (3.5, 4, 5)
case("V1-V3c", "3.5", [
    gl(0, "k", 60000, 10, expect=g(0,10,9,-1,6000)),
    raw(0, ["PTTL","k"], 6000), raw(0, ["GET","k"], "1700000006000000000"),
    gl(0, "k", 60000, 10, expect=g(0,10,8,-1,12000)),
    gl(0, "k", 60000, 10, 10, expect=g(1,10,0,12000,12000)),
    raw(0, ["GET","k"], "1700000012000000000"), raw(0, ["PTTL","k"], 12000),
    gl(11999, "k", 60000, 10, 10, expect=g(1,10,0,1,1)),
    gl(12000, "k", 60000, 10, 10, expect=g(0,10,0,-1,60000)),
])
steps = [gl(0, "k", 60000, 10, expect=g(0,10,9-i,-1,6000*(i+1))) for i in range(10)]
steps += [gl(0, "k", 60000, 10, expect=g(1,10,0,6000,60000)), raw(0, ["PTTL","k"], 60000), raw(1000, ["PTTL","k"], 59000)]
case("V4-V4c", "3.5", steps)
resets = [6000, 11999, 17998, 23997, 29996, 35995, 41994, 47993, 53992, 59991]
case("V5-V5b", "3.5", [gl(i, "k", 60000, 10, expect=g(0,10,9-i,-1,resets[i])) for i in range(10)] + [gl(10, "k", 60000, 10, expect=g(1,10,0,5990,59990))])
case("V6-V6f", "3.5", [
    gl(0, "k", 60000, 10, 10, expect=g(0,10,0,-1,60000)),
    gl(5999, "k", 60000, 10, expect=g(1,10,0,1,54001)),
    gl(6000, "k", 60000, 10, expect=g(0,10,0,-1,60000)),
    gl(6000, "k", 60000, 10, expect=g(1,10,0,6000,60000)),
    gl(18000, "k", 60000, 10, 2, expect=g(0,10,0,-1,60000)),
    gl(30000, "k", 60000, 10, 3, expect=g(1,10,0,6000,48000)),
])
case("V7-V7b", "3.5", [
    gl(0, "k", 60000, 10, 10, expect=g(0,10,0,-1,60000)),
    gl(0, "k", 60000, 10, 11, expect=g(1,10,0,-1,60000)),
    gl(30000, "k", 60000, 10, 11, expect=g(1,10,0,-1,30000)),
    gl(60000, "k", 60000, 10, 11, expect=g(1,10,0,-1,0)),
    raw(60001, ["EXISTS","k"], 0),
])
case("V8", "3.5", [gl(0, "k", 1000, 5, 6, expect=g(1,5,0,-1,0)), raw(0, ["EXISTS","k"], 0)])
case("V9-V9b", "3.5", [
    gl(0, "k", 1000, 3, expect=g(0,3,2,-1,334)), gl(0, "k", 1000, 3, expect=g(0,3,1,-1,667)),
    gl(0, "k", 1000, 3, expect=g(0,3,0,-1,1000)), gl(0, "k", 1000, 3, expect=g(1,3,0,334,1000)),
    gl(333, "k", 1000, 3, expect=g(1,3,0,1,667)), gl(334, "k", 1000, 3, expect=g(0,3,0,-1,1000)),
    gl(334, "k", 1000, 3, expect=g(1,3,0,333,1000)),
])
case("V10", "3.5", [gl(0,"k",1,1,expect=g(0,1,0,-1,1)), gl(0,"k",1,1,expect=g(1,1,0,1,1)), gl(1,"k",1,1,expect=g(0,1,0,-1,1))])
case("V11", "3.5", [gl(0,"k",1,3,expect=g(0,3,2,-1,1)), gl(0,"k",1,3,expect=g(0,3,1,-1,1)), gl(0,"k",1,3,expect=g(0,3,0,-1,1)), gl(0,"k",1,3,expect=g(1,3,0,1,1))])
case("V12", "3.5", [gl(0,"k",1,2000000,expect=g(0,2000000,1999999,-1,1))])
case("V12b", "3.5", [gl(0,"k",1,2000000,2000000,expect=g(0,2000000,0,-1,2)), gl(0,"k",1,2000000,expect=g(1,2000000,0,1,2))])
case("V13", "3.5", [gl(0,"k",1,1000000000000,expect=g(0,1000000000000,999999999999,-1,1))])
case("V14", "3.5", [gl(0,"k",1000000000000,1,expect=g(0,1,0,-1,1000000000000)), gl(0,"k",1000000000000,1,expect=g(1,1,0,1000000000000,1000000000000)), raw(0,["GET","k"],"2700000000000000000")])
case("V15", "3.5", [gl(0,"k",1000000000000,3,expect=g(0,3,2,-1,333333333334)), gl(0,"k",1000000000000,3,expect=g(0,3,1,-1,666666666667))])
case("V16", "3.5", [gl(0,"k",60000,9223372036854775807,expect=g(0,9223372036854775807,9223372036854775806,-1,1))])
case("V17-V20 argument errors", "3.5",
    [raw(0, ["GCRA.LIMIT","k",p,"10"], error=EPERIOD) for p in ["0","-1","1000000000001","abc","1.5","+5","010"]] +
    [gl(0,"k",0,10,error=EPERIOD)] +
    [raw(0, ["GCRA.LIMIT","k","60000",b], error=EBURST) for b in ["0","-3","x","9223372036854775808"]] +
    [gl(0,"k",60000,0,error=EBURST)] +
    [raw(0, ["GCRA.LIMIT","k","60000","10",c], error=ECOUNT) for c in ["0","-1","2.0"]] +
    [gl(0,"k",60000,10,0,error=ECOUNT), raw(0, ["GCRA.LIMIT","k","0","0","0"], error=EPERIOD)])
case("V21-V21d wrong types", "3.5", [
    raw(0,["RPUSH","l","a"],1), gl(0,"l",60000,10,error=WRONGTYPE), raw(0,["LRANGE","l","0","-1"],["a"]),
    raw(0,["SET","s","hello","EX","100"],"OK"), gl(0,"s",60000,10,error=WRONGTYPE), raw(0,["GET","s"],"hello"), raw(0,["TTL","s"],100),
    raw(0,["SET","f","1.5"],"OK"), gl(0,"f",60000,10,error=WRONGTYPE),
    raw(0,["SET","e",""],"OK"), gl(0,"e",60000,10,error=WRONGTYPE),
    gl(0,"l",0,10,error=EPERIOD),
])
case("V22", "3.5", [raw(0,["SET","n","123"],"OK"), gl(0,"n",60000,10,expect=g(0,10,9,-1,6000)), raw(0,["GET","n"],"1700000006000000000"), raw(0,["PTTL","n"],6000)])
case("V23", "3.5", [raw(0,["SET","big","9223372036854775807"],"OK"), gl(0,"big",60000,10,expect=g(1,10,0,7523371982855,7523372036855)), raw(0,["GET","big"],"9223372036854775807"), raw(0,["PTTL","big"],-1)])
case("V24", "3.5", [gl(0,"k",60000,10,5,expect=g(0,10,5,-1,30000)), gl(1000,"k",1000,10,expect=g(1,10,0,28100,29000)), gl(1000,"k",120000,10,expect=g(0,10,6,-1,41000))])
case("V26-V26b", "3.5", [gl(0,"k",60000,10,expect=g(0,10,9,-1,6000)), gl(0,"j",60000,10,expect=g(0,10,9,-1,6000)),
    reset(0,["k","j","nokey","k"],2), gl(0,"k",60000,10,expect=g(0,10,9,-1,6000)), reset(7000,["k"],0)])
case("V27 arity", "3.5", [
    raw(0,["GCRA.LIMIT","k","60000"],error="ERR wrong number of arguments for 'gcra.limit' command"),
    raw(0,["GCRA.LIMIT","k","60000","10","1","x"],error="ERR wrong number of arguments for 'gcra.limit' command"),
    raw(0,["GCRA.RESET"],error="ERR wrong number of arguments for 'gcra.reset' command")])
case("P1", "4", [gp(0,"k",60000,10,expect=g(0,10,9,-1,6000)), raw(0,["EXISTS","k"],0)])
case("P2", "4", [gl(0,"k",60000,10,expect=g(0,10,9,-1,6000)), gp(0,"k",60000,10,expect=g(0,10,8,-1,12000)),
    raw(0,["GET","k"],"1700000006000000000"), raw(0,["PTTL","k"],6000), gl(0,"k",60000,10,expect=g(0,10,8,-1,12000))])
case("P3-P4", "4", [gl(0,"k",60000,10,expect=g(0,10,9-i,-1,6000*(i+1))) for i in range(10)] + [
    gp(0,"k",60000,10,expect=g(1,10,0,6000,60000)), gp(0,"k",60000,10,10,expect=g(1,10,0,60000,60000)), gp(0,"k",60000,10,11,expect=g(1,10,0,-1,60000)),
    gp(6000,"k",60000,10,expect=g(0,10,0,-1,60000)), gp(6000,"k",60000,10,2,expect=g(1,10,0,6000,54000)), raw(6000,["PTTL","k"],54000)])
case("P5-P6", "4", [raw(0,["RPUSH","l","a"],1), gp(0,"l",60000,10,error=WRONGTYPE), raw(0,["SET","s","hello"],"OK"), gp(0,"s",60000,10,error=WRONGTYPE),
    gp(0,"k",0,10,error=EPERIOD), raw(0,["GCRA.PEEK","k","60000"],error="ERR wrong number of arguments for 'gcra.peek' command")])
case("R1-R4", "5", [gl(0,"k",60000,10,expect=g(0,10,9,-1,6000)), raw(0,["SET","s","hello"],"OK"), reset(0,["k","s"],error=WRONGTYPE),
    raw(0,["EXISTS","k"],1), raw(0,["GET","s"],"hello"), raw(0,["RPUSH","l","a"],1), reset(0,["nokey","l"],error=WRONGTYPE),
    raw(0,["SET","n","42"],"OK"), reset(0,["n"],1), raw(0,["SET","x","hello","PX","1"],"OK"), reset(2,["x"],0)])

# ---- CL.THROTTLE (6.6)
c1 = [(0,6,(1,5,5,-1,0),(1,5,5,-1,0)),(0,1,(0,5,4,-1,1),(0,5,4,-1,2)),(0,1,(0,5,3,-1,2),(0,5,3,-1,3)),(0,1,(0,5,2,-1,3),(0,5,2,-1,4)),
      (0,1,(0,5,1,-1,4),(0,5,1,-1,5)),(0,1,(0,5,0,-1,5),(0,5,0,-1,6)),(0,1,(1,5,0,1,5),(1,5,0,2,6)),(3000,1,(0,5,2,-1,3),(0,5,2,-1,4)),
      (3100,1,(0,5,1,-1,4),(0,5,1,-1,4)),(4000,1,(0,5,1,-1,4),(0,5,1,-1,5)),(8000,1,(0,5,4,-1,1),(0,5,4,-1,2)),(9500,1,(0,5,4,-1,1),(0,5,4,-1,2)),
      (9500,0,(0,5,4,-1,1),(0,5,4,-1,2)),(9500,2,(0,5,2,-1,3),(0,5,2,-1,4)),(9500,5,(1,5,2,3,3),(1,5,2,4,4)),(15000,6,(1,5,5,-1,0),(1,5,5,-1,0))]
for mode, idx in (("redis-cell",2),("dragonfly",3)):
    case("C1 "+mode, "6.6", [cl(r[0],"k",4,1,1,r[1],expect=th(*r[idx])) for r in c1], config={"throttle-compat": mode})
c2 = [(0,6,(1,5,5,-1,0),(1,5,5,-1,0)),(0,1,(0,5,4,-1,10),(0,5,4,-1,11)),(0,1,(0,5,3,-1,20),(0,5,3,-1,21)),(0,1,(0,5,2,-1,30),(0,5,2,-1,31)),
      (0,1,(0,5,1,-1,40),(0,5,1,-1,41)),(0,1,(0,5,0,-1,50),(0,5,0,-1,51)),(0,1,(1,5,0,10,50),(1,5,0,11,51)),(30000,1,(0,5,2,-1,30),(0,5,2,-1,31)),
      (31000,1,(0,5,1,-1,39),(0,5,1,-1,40)),(40000,1,(0,5,1,-1,40),(0,5,1,-1,41)),(80000,1,(0,5,4,-1,10),(0,5,4,-1,11)),(95000,1,(0,5,4,-1,10),(0,5,4,-1,11)),
      (95000,0,(0,5,4,-1,10),(0,5,4,-1,11)),(95000,2,(0,5,2,-1,30),(0,5,2,-1,31)),(95000,5,(1,5,2,30,30),(1,5,2,31,31))]
for mode, idx in (("redis-cell",2),("dragonfly",3)):
    steps = [cl(r[0],"foo",4,1,10,r[1],expect=th(*r[idx])) for r in c2]
    steps += [cl(0,"bar",10,1,0,error=EZERO), cl(0,"bar",10,0,1,error=EZERO)]
    steps += [cl(0,"bar2",4,500000,1,2,expect=th(0,5,3,-1,0) if mode=="redis-cell" else th(0,5,3,-1,1)), raw(0,["PTTL","bar2"],1)]
    case("C2 "+mode, "6.6", steps, config={"throttle-compat": mode})
for mode in ("redis-cell","dragonfly"):
    d = mode == "dragonfly"
    case("C3 "+mode, "6.6", [
        cl(0,"a",0,1,10,1,expect=th(0,1,0,-1,11 if d else 10)),
        cl(1,"a",0,1,10,1,expect=th(1,1,0,10,10)),
        cl(1000,"a",0,1,10,1,expect=th(1,1,0,10 if d else 9,10 if d else 9)),
        cl(0,"b",0,1,2,1,expect=th(0,1,0,-1,3 if d else 2)), cl(1,"b",0,1,2,1,expect=th(1,1,0,2,2)), cl(2000,"b",0,1,2,1,expect=th(0,1,0,-1,3 if d else 2)),
        cl(0,"c",20,120,60,1,expect=th(0,21,20,-1,1)),
        cl(0,"d",4,1,1,0,expect=th(0,5,5,-1,0)), raw(0,["EXISTS","d"],0),
        cl(0,"e",0,1000000000,1,expect=th(0,1,0,-1,1 if d else 0)),
        cl(0,"f",6,1,1000000000,expect=th(0,7,6,-1,1000000001 if d else 1000000000)),
    ], config={"throttle-compat": mode})
case("C4 errors", "6.6", [
    raw(0,["CL.THROTTLE","k","1","1"],error="ERR wrong number of arguments for 'cl.throttle' command"),
    raw(0,["CL.THROTTLE","k","1","1","1","1","extra"],error="ERR wrong number of arguments for 'cl.throttle' command"),
    cl(0,"k",-1,1,1,error=EINT), raw(0,["CL.THROTTLE","k","abc","1","1"],error=EINT), raw(0,["CL.THROTTLE","k","1","1.5","1"],error=EINT),
    cl(0,"k",1,1,1,-1,error=EINT), raw(0,["CL.THROTTLE","k","1","1","1","+1"],error=EINT),
    cl(0,"k",1,0,1,error=EZERO), cl(0,"k",1,1,0,error=EZERO), cl(0,"k",0,2000000000,1,error=EZERO),
    cl(0,"k",9223372036854775807,1,1,error=EINT), cl(0,"k",0,1,9223372037,error=EINT), cl(0,"k",9223372036854775806,1,1,error=EINT),
    cl(0,"k",7,1,1000000000,error=EINT),
    raw(0,["RPUSH","l","a"],1), cl(0,"l",1,1,1,error=WRONGTYPE), raw(0,["SET","s","hello"],"OK"), cl(0,"s",1,1,1,error=WRONGTYPE),
    raw(0,["GET","s"],"hello"), cl(0,"l",1,0,1,error=EZERO)])
case("C5 shared state", "6.6", [
    gl(0,"x",10000,1,expect=g(0,1,0,-1,10000)), cl(0,"x",0,1,10,expect=th(1,1,0,10,10)),
    cl(10000,"x",0,1,10,expect=th(0,1,0,-1,10)), raw(10000,["GET","x"],"1700000020000000000"),
    gp(10000,"x",10000,1,expect=g(1,1,0,10000,10000)),
    cl(0,"y",9,10,60,3,expect=th(0,10,7,-1,18)), gl(0,"y",60000,10,expect=g(0,10,6,-1,24000))], config={"throttle-compat": "redis-cell"})

# ---- RATELIMIT (8.9)
case("L1 product example", "8.9", [create(0,"api",100,60000), check(0,"api","user:42",expect=rl(1,99,0,100,0)),
    check(0,"api","user:42",5,expect=rl(1,94,0,100,1)),
    stats(0,"api",{"name":"api","algo":"sliding_window","limit":100,"window_ms":60000,"unique_keys":1,"total_allowed":6,"total_denied":0}),
    rlreset(0,"api","user:42",1), rlreset(0,"api","user:42",0)])
case("L2 sliding_window", "8.9", [create(0,"a",3,1000),
    check(0,"a","u",expect=rl(1,2,0,3,0)), check(100,"a","u",expect=rl(1,1,0,3,1)), check(200,"a","u",expect=rl(1,0,0,3,2)),
    check(300,"a","u",expect=rl(0,0,700,3,3)), peek(300,"a","u",rl(0,0,700,3,3)), check(999,"a","u",expect=rl(0,0,1,3,3)),
    check(1000,"a","u",expect=rl(1,0,0,3,2)), check(1000,"a","u",expect=rl(0,0,100,3,3)), check(1100,"a","u",expect=rl(1,0,0,3,2)),
    stats(1100,"a",{"name":"a","algo":"sliding_window","limit":3,"window_ms":1000,"unique_keys":1,"total_allowed":5,"total_denied":3}),
    stats(2200,"a",{"name":"a","algo":"sliding_window","limit":3,"window_ms":1000,"unique_keys":0,"total_allowed":5,"total_denied":3})])
case("L3 no edge burst", "8.9", [create(0,"b",5,1000), check(999,"b","u",5,expect=rl(1,0,0,5,0)), check(1000,"b","u",expect=rl(0,0,999,5,5)),
    check(1998,"b","u",expect=rl(0,0,1,5,5)), check(1999,"b","u",5,expect=rl(1,0,0,5,0)), check(1999,"b","u",6,expect=rl(0,0,-1,5,5)),
    stats(1999,"b",{"name":"b","algo":"sliding_window","limit":5,"window_ms":1000,"unique_keys":1,"total_allowed":10,"total_denied":8})])
case("L4 costs and retry", "8.9", [create(0,"c",10,1000), check(0,"c","u",4,expect=rl(1,6,0,10,0)), check(200,"c","u",4,expect=rl(1,2,0,10,4)),
    check(400,"c","u",4,expect=rl(0,2,600,10,8)), check(400,"c","u",2,expect=rl(1,0,0,10,8)), check(500,"c","u",3,expect=rl(0,0,500,10,10)),
    check(1000,"c","u",3,expect=rl(1,1,0,10,6)), peek(1000,"c","u",rl(1,1,0,10,9))])
case("L5 bounded log", "8.9", [create(0,"m",3,1000), check(0,"m","u",expect=rl(1,2,0,3,0)), check(100,"m","u",expect=rl(1,1,0,3,1)),
    check(300,"m","u",expect=rl(1,0,0,3,2)), check(1000,"m","u",expect=rl(0,0,100,3,3)), peek(1000,"m","u",rl(0,0,100,3,3)),
    check(1100,"m","u",expect=rl(1,1,0,3,1))], config={"ratelimit.sliding-window-max-entries": "2"})
case("L5 default K", "8.9", [create(0,"m",3,1000), check(0,"m","u",expect=rl(1,2,0,3,0)), check(100,"m","u",expect=rl(1,1,0,3,1)),
    check(300,"m","u",expect=rl(1,0,0,3,2)), check(1000,"m","u",expect=rl(1,0,0,3,2)), peek(1000,"m","u",rl(0,0,100,3,3)),
    check(1100,"m","u",expect=rl(1,0,0,3,2))])
case("L6 token_bucket", "8.9", [create(0,"uploads",20,4000,"token_bucket",refill="5"),
    check(0,"uploads","u",20,expect=rl(1,0,0,20,0)), check(0,"uploads","u",expect=rl(0,0,200,20,20)), peek(199,"uploads","u",rl(0,0,1,20,20)),
    check(200,"uploads","u",expect=rl(1,0,0,20,19)), check(200,"uploads","u",expect=rl(0,0,200,20,20)),
    check(1000,"uploads","u",5,expect=rl(0,4,200,20,16)), check(1000,"uploads","u",21,expect=rl(0,4,-1,20,16)),
    stats(1000,"uploads",{"name":"uploads","algo":"token_bucket","limit":20,"window_ms":4000,"unique_keys":1,"total_allowed":21,"total_denied":28,"refill_per_sec":5}),
    stats(5000,"uploads",{"name":"uploads","algo":"token_bucket","limit":20,"window_ms":4000,"unique_keys":0,"total_allowed":21,"total_denied":28,"refill_per_sec":5})])
for algo, field in (("token_bucket","refill_per_sec"),("leaky_bucket","drain_per_sec")):
    case("L7/L8 "+algo, "8.9", [create(0,"t",3,1000,algo),
        check(0,"t","u",expect=rl(1,2,0,3,0)), check(0,"t","u",expect=rl(1,1,0,3,1)), check(0,"t","u",expect=rl(1,0,0,3,2)), check(0,"t","u",expect=rl(0,0,334,3,3)),
        check(333,"t","u",expect=rl(0,0,1,3,3)), check(334,"t","u",expect=rl(1,0,0,3,2)), peek(334,"t","u",rl(0,0,333,3,3)),
        stats(334,"t",{"name":"t","algo":algo,"limit":3,"window_ms":1000,"unique_keys":1,"total_allowed":4,"total_denied":2,field:3})])
case("L9 fractional rate", "8.9", [create(0,"h",2,1000,"token_bucket",refill="0.5"), check(0,"h","u",2,expect=rl(1,0,0,2,0)),
    check(0,"h","u",expect=rl(0,0,2000,2,2)), check(1999,"h","u",expect=rl(0,0,1,2,2)), check(2000,"h","u",expect=rl(1,0,0,2,1)),
    peek(2000,"h","u",rl(0,0,2000,2,2)),
    stats(2000,"h",{"name":"h","algo":"token_bucket","limit":2,"window_ms":1000,"unique_keys":1,"total_allowed":3,"total_denied":2,"refill_per_sec":0.5})])
case("L10 fresh keys", "8.9", [create(0,"api",100,60000), create(0,"tb",100,60000,"token_bucket"), peek(0,"api","x",rl(1,100,0,100,0)),
    peek(0,"tb","x",rl(1,100,0,100,0)), check(0,"api","x",101,expect=rl(0,100,-1,100,0)),
    stats(0,"api",{"name":"api","algo":"sliding_window","limit":100,"window_ms":60000,"unique_keys":0,"total_allowed":0,"total_denied":101})])
case("L11 errors and administration", "8.9", [
    check(0,"nolimiter","u",expect=rl(0,0,0,0,0)), peek(0,"nolimiter","u",rl(0,0,0,0,0)),
    check(0,"nolimiter","u",0,error="ERR invalid cost: must be a positive integer"),
    create(0,"api",100,60000), create(0,"api",100,60000,error=EEXISTS),
    rlreset(0,"nolimiter","u",error=ENOTFOUND), stats(0,"nolimiter",error=ENOTFOUND), drop(0,"nolimiter",error=ENOTFOUND),
    raw(0,["RATELIMIT.CREATE","x","10"],error="ERR wrong number of arguments for 'ratelimit.create' command"),
    create(0,"",10,1000,error="ERR invalid name: must be 1 to 512 bytes"), create(0,"n"*513,10,1000,error="ERR invalid name: must be 1 to 512 bytes"),
    create(0,"x",0,1000,error="ERR invalid limit: must be a positive integer"),
    raw(0,["RATELIMIT.CREATE","x","9223372036854775808","1000"],error="ERR invalid limit: must be a positive integer"),
    create(0,"x",10,0,error="ERR invalid window: must be a positive integer (milliseconds)"),
    create(0,"x",10,1000000000001,error="ERR invalid window: must be a positive integer (milliseconds)"),
    raw(0,["RATELIMIT.CREATE","x","10","1000","ALGO","fixed_window"],error="ERR syntax error"),
    raw(0,["RATELIMIT.CREATE","x","10","1000","REFILL","5"],error="ERR syntax error"),
    raw(0,["RATELIMIT.CREATE","x","10","1000","ALGO","leaky_bucket","REFILL","5"],error="ERR syntax error"),
    ] + [create(0,"x",10,1000,"token_bucket",refill=r,error="ERR invalid rate: must be a positive number") for r in ["0","-1","abc","1e3",".5","inf","0.000000001"]] + [
    create(0,"x",10,1000,"token_bucket",refill="0.00000001"), drop(0,"x"),
    raw(0,["RATELIMIT.CREATE","x","10","1000","algo","TOKEN_BUCKET","refill","2.5"],"OK"),
    stats(0,"x",{"name":"x","algo":"token_bucket","limit":10,"window_ms":1000,"unique_keys":0,"total_allowed":0,"total_denied":0,"refill_per_sec":2.5}),
    drop(0,"x"),
    raw(0,["RATELIMIT.CHECK","api","k","COST"],error="ERR syntax error"),
    raw(0,["RATELIMIT.CHECK","api","k","COST","1","COST","1"],error="ERR syntax error"),
    raw(0,["RATELIMIT.CHECK","api","k","WEIGHT","1"],error="ERR syntax error"),
    raw(0,["RATELIMIT.CHECK","api","k","COST","1.5"],error="ERR invalid cost: must be a positive integer"),
    check(0,"api","k",-1,error="ERR invalid cost: must be a positive integer"),
    raw(0,["RATELIMIT.PEEK","api","k","COST","1"],error="ERR wrong number of arguments for 'ratelimit.peek' command"),
    drop(0,"api"), check(0,"api","user:42",expect=rl(0,0,0,0,0)), lst(0,[]),
    create(0,"b",1,1000), create(0,"a",1,1000), create(0,"B",1,1000), lst(0,["B","a","b"]),
    drop(0,"a"), drop(0,"b"), drop(0,"B"),
])
case("L11 max-limiters", "8.9", [create(0,"api",1,1000), create(0,"other",1,1000,error=EEXISTS), drop(0,"api"), create(0,"other",1,1000)],
    config={"ratelimit.max-limiters": "1"})

TYPED_ERRORS = {WRONGTYPE, ENOTFOUND, EEXISTS}
def to_raw(s):
    a = s["args"]; op = s["op"]
    if op in ("gcra_limit","gcra_peek"):
        cmd = ["GCRA.LIMIT" if op=="gcra_limit" else "GCRA.PEEK", a["key"], a["period_ms"], a["burst"]] + ([a["count"]] if "count" in a else [])
    elif op == "cl_throttle":
        cmd = ["CL.THROTTLE", a["key"], a["max_burst"], a["count_per_period"], a["period_s"]] + ([a["quantity"]] if "quantity" in a else [])
    elif op == "ratelimit_create":
        cmd = ["RATELIMIT.CREATE", a["name"], a["limit"], a["window_ms"]]
        if "algo" in a: cmd += ["ALGO", a["algo"]]
        if "refill" in a: cmd += ["REFILL", a["refill"]]
        if "drain" in a: cmd += ["DRAIN", a["drain"]]
    elif op in ("ratelimit_check",):
        cmd = ["RATELIMIT.CHECK", a["name"], a["key"]] + (["COST", a["cost"]] if "cost" in a else [])
    else:
        return s
    return {"at": s["at"], "op": "raw", "cmd": [str(x) for x in cmd], "error": s["error"]}
for c in cases:
    c["steps"] = [to_raw(s) if "error" in s and s["error"] not in TYPED_ERRORS and s["op"] != "raw" else s for s in c["steps"]]

doc = {
  "_comment": ("Test vectors of ../shared/spec/RATELIMIT.md (sections 3.5, 4, 5, 6.6, 8.9) for every HotKV client. "
               "Before each case a client runs FLUSHALL, drops every limiter (RATELIMIT.LIST, RATELIMIT.DROP), applies the case's config "
               "(CONFIG SET; defaults restored after: throttle-compat redis-cell, ratelimit.max-limiters 10000, "
               "ratelimit.sliding-window-max-entries 1024) and, before each step, sets the server clock with DEBUG CLOCK SET t0+at. "
               "A step calls the client's typed method for op with args (argument errors are written as raw commands, so that no client's own argument checks stand in the way) (period_ms and window_ms in milliseconds, period_s in seconds, "
               "refill/drain as decimal strings) and compares the typed result with expect, or the error message with error. "
               "op raw sends cmd as it is; expect is then the reply: an integer, a string, null or a list of strings."),
  "t0": T0,
  "defaults": {"throttle-compat": "redis-cell", "ratelimit.max-limiters": "10000", "ratelimit.sliding-window-max-entries": "1024"},
  "cases": cases,
}
lines=["{"]
lines.append(' "_comment": '+json.dumps(doc["_comment"])+',')
lines.append(' "t0": '+json.dumps(T0)+',')
lines.append(' "defaults": '+json.dumps(doc["defaults"])+',')
lines.append(' "cases": [')
for i,c in enumerate(cases):
    head={k:v for k,v in c.items() if k!="steps"}
    lines.append('  {'+json.dumps(head)[1:-1]+', "steps": [')
    for j,s in enumerate(c["steps"]):
        lines.append('   '+json.dumps(s)+(',' if j<len(c["steps"])-1 else ''))
    lines.append('  ]}'+(',' if i<len(cases)-1 else ''))
lines.append(' ]')
lines.append('}')
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors.json"), "w").write("\n".join(lines)+"\n")
json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors.json")))
print(len(cases), sum(len(c["steps"]) for c in cases))
