"""The source text of the MultiPL-E dialects' drivers (:mod:`harness.languages.multiple_e`):
each language's value encoder and the main loop that writes the result frames."""

JS_ENCODER = r"""
const __codeeval_js = (function () {
  // What assert.deepEqual (node's lib/internal/util/comparisons.js) reads of a value, through
  // intrinsics captured here, never through the value's own methods.
  const bind = (f) => Function.prototype.call.bind(f);
  const getter = (o, k) => bind(Object.getOwnPropertyDescriptor(o, k).get);
  return {
    tag: bind(Object.prototype.toString), keys: Object.keys, isArray: Array.isArray,
    hasOwn: bind(Object.prototype.hasOwnProperty), push: bind(Array.prototype.push),
    isSafeInteger: Number.isSafeInteger, isFinite: Number.isFinite, isNaN: Number.isNaN,
    is: Object.is, String, Number, Error, types: require('util').types,
    time: bind(Date.prototype.getTime), source: getter(RegExp.prototype, 'source'),
    flags: getter(RegExp.prototype, 'flags'), mapEach: bind(Map.prototype.forEach),
    setEach: bind(Set.prototype.forEach), numberOf: bind(Number.prototype.valueOf),
    stringOf: bind(String.prototype.valueOf), booleanOf: bind(Boolean.prototype.valueOf),
    bigintText: bind(BigInt.prototype.toString),
  };
})();
function __codeeval_enc(v, depth) {
  // ['a', items] / ['o', [[key, value], ...]]: an array / an object tagged [object Object];
  // an array with a hole (['h']), an enumerable own non-index key or another tag is
  // ['a', items, [[key, value], ...], tag]; any other object ['t', tag, kind, data, pairs];
  // a BigInt ['B', decimal text]. suites.js_deep_equal.js_deep_equal compares them.
  const I = __codeeval_js, T = I.types;
  if (depth > 200) throw new RangeError('nested too deeply');
  if (v === null) return ['null'];
  switch (typeof v) {
    case 'undefined': return ['u'];
    case 'number': return ['n', I.isFinite(v) ? v : I.String(v)];
    case 'string': return ['s', v];
    case 'boolean': return ['b', v];
    case 'bigint': return ['B', I.bigintText(v)];
    case 'object': break;
    default: return ['x', typeof v];
  }
  const enc = (x) => __codeeval_enc(x, depth + 1);
  const pairs = (keys) => {
    const out = [];
    for (let i = 0; i < keys.length; i++) I.push(out, [keys[i], enc(v[keys[i]])]);
    return out;
  };
  const tag = I.tag(v);
  if (I.isArray(v)) {
    const length = v.length, items = [], extra = [], keys = I.keys(v);
    if (!I.isSafeInteger(length) || length > 0x1000000) throw new RangeError('array too long');
    let holes = false;
    for (let i = 0; i < length; i++) {
      if (I.hasOwn(v, i)) I.push(items, enc(v[i]));
      else { I.push(items, ['h']); holes = true; }
    }
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i];
      if (I.String(I.Number(k) >>> 0) !== k || k === '4294967295') I.push(extra, k);
    }
    if (!extra.length && !holes && tag === '[object Array]') return ['a', items];
    return ['a', items, pairs(extra), tag];
  }
  if (tag === '[object Object]') return ['o', pairs(I.keys(v))];
  let kind = 'other', data = null;
  if (T.isDate(v)) {
    kind = 'date';
    const t = I.time(v);
    data = I.isNaN(t) ? null : t;
  } else if (T.isRegExp(v)) {
    kind = 'regexp';
    data = [I.source(v), I.flags(v), enc(v.lastIndex)];
  } else if (T.isNativeError(v) || v instanceof I.Error) {
    kind = 'error';
    data = [enc(v.name), enc(v.message)];
  } else if (T.isArrayBufferView(v)) {
    kind = 'view';
  } else if (T.isSet(v)) {
    const values = [];
    I.setEach(v, (x) => I.push(values, x));
    kind = 'set';
    data = [];
    for (let i = 0; i < values.length; i++) I.push(data, enc(values[i]));
  } else if (T.isMap(v)) {
    const entries = [];
    I.mapEach(v, (x, k) => I.push(entries, k, x));
    kind = 'map';
    data = [];
    for (let i = 0; i < entries.length; i += 2) I.push(data, [enc(entries[i]), enc(entries[i + 1])]);
  } else if (T.isAnyArrayBuffer(v)) {
    kind = 'buffer';
  } else if (T.isBoxedPrimitive(v)) {
    kind = 'boxed';
    if (T.isNumberObject(v)) {
      const n = I.numberOf(v);
      data = ['n', I.is(n, -0) ? '-0' : I.isFinite(n) ? n : I.String(n)];
    } else if (T.isStringObject(v)) data = ['s', I.stringOf(v)];
    else if (T.isBooleanObject(v)) data = ['b', I.booleanOf(v)];
    else if (T.isBigIntObject(v)) data = ['B', I.bigintText(v)];
    else data = ['x', 'symbol'];
  }
  return ['t', tag, kind, data, pairs(I.keys(v))];
}
"""

JS_DRIVER = """
// ---- codeeval driver (generated) ----
{encoder}
function __codeeval_case(i) {{
  switch (i) {{
{branches}
  }}
  throw new Error('no such case');
}}
(function () {{
  const fs = require('fs');
  const nonce = fs.readFileSync(0, 'utf8').split('\\n')[0];
  const start = parseInt(process.argv[2], 10), fd = parseInt(process.argv[3], 10);
  fs.writeSync(fd, JSON.stringify({{n: nonce, ready: true}}) + '\\n');
  for (let i = start; i < {count}; i++) {{
    let line;
    try {{ line = JSON.stringify({{n: nonce, c: i, v: __codeeval_case(i)}}); }}
    catch (e) {{ line = JSON.stringify({{n: nonce, c: i, e: String(e && e.name ? e.name + ': ' + e.message : e)}}); }}
    fs.writeSync(fd, line + '\\n');
  }}
  fs.writeSync(fd, JSON.stringify({{n: nonce, done: true}}) + '\\n');
}})();
"""

CPP_ENCODER = r"""
#include <unistd.h>
#include <cstdio>
#include <iostream>
namespace codeeval_driver {
void enc(std::string& o, bool v);
void enc(std::string& o, long v);
void enc(std::string& o, long long v);
void enc(std::string& o, int v);
void enc(std::string& o, unsigned long v);
void enc(std::string& o, double v);
void enc(std::string& o, float v);
void enc(std::string& o, char v);
void enc(std::string& o, const char* v);
void enc(std::string& o, const std::string& v);
template <class T> void enc(std::string& o, const std::vector<T>& v);
template <class T> void enc(std::string& o, const std::optional<T>& v);
template <class K, class V> void enc(std::string& o, const std::map<K, V>& v);
template <class A, class B> void enc(std::string& o, const std::pair<A, B>& v);
template <class... T> void enc(std::string& o, const std::tuple<T...>& v);
void enc(std::string& o, bool v) { o += v ? "true" : "false"; }
void enc(std::string& o, long v) { o += std::to_string(v); }
void enc(std::string& o, long long v) { o += std::to_string(v); }
void enc(std::string& o, int v) { o += std::to_string(v); }
void enc(std::string& o, unsigned long v) { o += std::to_string(v); }
void enc(std::string& o, double v) {
  if (std::isnan(v)) { o += "{\"f\":\"NaN\"}"; return; }
  if (std::isinf(v)) { o += v > 0 ? "{\"f\":\"Infinity\"}" : "{\"f\":\"-Infinity\"}"; return; }
  char buf[40]; std::snprintf(buf, sizeof buf, "%.17g", v); o += buf;
}
void enc(std::string& o, float v) { enc(o, (double)v); }
void enc(std::string& o, const std::string& v) {
  o += '"';
  for (unsigned char c : v) {
    if (c == '"' || c == '\\') { o += '\\'; o += (char)c; }
    else if (c < 0x20) { char buf[8]; std::snprintf(buf, sizeof buf, "\\u%04x", c); o += buf; }
    else o += (char)c;
  }
  o += '"';
}
void enc(std::string& o, char v) { enc(o, std::string(1, v)); }
void enc(std::string& o, const char* v) { enc(o, std::string(v)); }
template <class T> void enc(std::string& o, const std::vector<T>& v) {
  o += '[';
  for (size_t i = 0; i < v.size(); i++) { if (i) o += ','; enc(o, (T)v[i]); }
  o += ']';
}
template <class T> void enc(std::string& o, const std::optional<T>& v) {
  if (v.has_value()) enc(o, *v); else o += "null";
}
template <class K, class V> void enc(std::string& o, const std::map<K, V>& v) {
  o += "{\"m\":["; bool first = true;
  for (const auto& kv : v) { if (!first) o += ','; first = false; o += '['; enc(o, kv.first); o += ','; enc(o, kv.second); o += ']'; }
  o += "]}";
}
template <class A, class B> void enc(std::string& o, const std::pair<A, B>& v) {
  o += "{\"t\":["; enc(o, v.first); o += ','; enc(o, v.second); o += "]}";
}
template <class... T> void enc(std::string& o, const std::tuple<T...>& v) {
  o += "{\"t\":["; bool first = true;
  std::apply([&](const auto&... x) { ((o += first ? "" : ",", first = false, enc(o, x)), ...); }, v);
  o += "]}";
}
void put(int fd, const std::string& line) {
  size_t done = 0;
  while (done < line.size()) { ssize_t n = ::write(fd, line.data() + done, line.size() - done); if (n <= 0) std::_Exit(3); done += (size_t)n; }
}
}  // namespace codeeval_driver
"""

CPP_MAIN = r"""int main(int argc, char** argv) {
  std::string nonce; std::getline(std::cin, nonce);
  int start = std::atoi(argv[1]); int fd = std::atoi(argv[2]);
  codeeval_driver::put(fd, "{\"n\":\"" + nonce + "\",\"ready\":true}\n");
  for (int i = start; i < @COUNT@; i++) {
    std::string head = "{\"n\":\"" + nonce + "\",\"c\":" + std::to_string(i);
    std::string o;
    try { codeeval_case(i, o); o = head + ",\"v\":[" + o + "]}\n"; }
    catch (const std::exception& e) { o.clear(); o = head + ",\"e\":"; codeeval_driver::enc(o, std::string("exception: ") + e.what()); o += "}\n"; }
    catch (...) { o = head + ",\"e\":\"exception: (not a std::exception)\"}\n"; }
    codeeval_driver::put(fd, o);
  }
  codeeval_driver::put(fd, "{\"n\":\"" + nonce + "\",\"done\":true}\n");
  return 0;
}
"""

JAVA_ENCODER = r"""
final class CodeevalDriver {
    static void enc(StringBuilder o, Object v, int depth) {
        if (depth > 200) throw new IllegalStateException("nested too deeply");
        if (v == null) { o.append("null"); }
        else if (v instanceof Boolean) { o.append(v.toString()); }
        else if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) { o.append(v.toString()); }
        else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d)) o.append("{\"f\":\"NaN\"}");
            else if (Double.isInfinite(d)) o.append(d > 0 ? "{\"f\":\"Infinity\"}" : "{\"f\":\"-Infinity\"}");
            else o.append(Double.toString(d));
        }
        else if (v instanceof String || v instanceof Character) { str(o, v.toString()); }
        else if (v instanceof Optional) {
            Optional<?> opt = (Optional<?>) v;
            o.append("{\"o\":[");
            if (opt.isPresent()) enc(o, opt.get(), depth + 1);
            o.append("]}");
        }
        else if (v instanceof org.javatuples.Tuple) { o.append("{\"t\":"); enc(o, ((org.javatuples.Tuple) v).toList(), depth + 1); o.append("}"); }
        else if (v instanceof List) {
            o.append('['); boolean first = true;
            for (Object x : (List<?>) v) { if (!first) o.append(','); first = false; enc(o, x, depth + 1); }
            o.append(']');
        }
        else if (v instanceof Map) {
            o.append("{\"m\":["); boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) o.append(','); first = false;
                o.append('['); enc(o, e.getKey(), depth + 1); o.append(','); enc(o, e.getValue(), depth + 1); o.append(']');
            }
            o.append("]}");
        }
        else { o.append("{\"x\":"); str(o, v.getClass().getName()); o.append("}"); }
    }
    static void str(StringBuilder o, String s) {
        o.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '"' || c == '\\') { o.append('\\').append(c); }
            else if (c < 0x20 || (c >= 0xD800 && c <= 0xDFFF)) { o.append(String.format("\\u%04x", (int) c)); }
            else o.append(c);
        }
        o.append('"');
    }
}
"""

JAVA_MAIN = r"""    public static void main(String[] args) throws Exception {
        String nonce = new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
        int start = Integer.parseInt(args[0]);
        java.io.OutputStream out = new java.io.FileOutputStream("/proc/self/fd/" + args[1]);
        out.write(("{\"n\":\"" + nonce + "\",\"ready\":true}\n").getBytes("UTF-8")); out.flush();
        for (int i = start; i < @COUNT@; i++) {
            String head = "{\"n\":\"" + nonce + "\",\"c\":" + i;
            StringBuilder o = new StringBuilder();
            String line;
            try { run(i, o); line = head + ",\"v\":[" + o + "]}\n"; }
            catch (Throwable t) { StringBuilder e = new StringBuilder(); CodeevalDriver.str(e, t.getClass().getSimpleName() + ": " + t.getMessage()); line = head + ",\"e\":" + e + "}\n"; }
            out.write(line.getBytes("UTF-8")); out.flush();
        }
        out.write(("{\"n\":\"" + nonce + "\",\"done\":true}\n").getBytes("UTF-8")); out.flush();
    }
"""

RUST_ENCODER = r"""
trait CodeevalEnc { fn codeeval_enc(&self, o: &mut String); }
macro_rules! codeeval_int { ($($t:ty),*) => { $(impl CodeevalEnc for $t { fn codeeval_enc(&self, o: &mut String) { o.push_str(&self.to_string()); } })* } }
codeeval_int!(i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize);
impl CodeevalEnc for bool { fn codeeval_enc(&self, o: &mut String) { o.push_str(if *self { "true" } else { "false" }); } }
impl CodeevalEnc for f64 { fn codeeval_enc(&self, o: &mut String) {
    if self.is_nan() { o.push_str("{\"f\":\"NaN\"}"); }
    else if self.is_infinite() { o.push_str(if *self > 0.0 { "{\"f\":\"Infinity\"}" } else { "{\"f\":\"-Infinity\"}" }); }
    else { o.push_str(&format!("{:?}", self)); }
} }
impl CodeevalEnc for f32 { fn codeeval_enc(&self, o: &mut String) { (*self as f64).codeeval_enc(o); } }
impl CodeevalEnc for String { fn codeeval_enc(&self, o: &mut String) { codeeval_str(o, self); } }
impl CodeevalEnc for &str { fn codeeval_enc(&self, o: &mut String) { codeeval_str(o, self); } }
impl CodeevalEnc for char { fn codeeval_enc(&self, o: &mut String) { codeeval_str(o, &self.to_string()); } }
impl CodeevalEnc for () { fn codeeval_enc(&self, o: &mut String) { o.push_str("{\"t\":[]}"); } }
impl<T: CodeevalEnc> CodeevalEnc for Vec<T> { fn codeeval_enc(&self, o: &mut String) {
    o.push('['); for (i, x) in self.iter().enumerate() { if i > 0 { o.push(','); } x.codeeval_enc(o); } o.push(']');
} }
impl<T: CodeevalEnc> CodeevalEnc for Option<T> { fn codeeval_enc(&self, o: &mut String) {
    match self { Some(x) => x.codeeval_enc(o), None => o.push_str("null") }
} }
impl<K: CodeevalEnc, V: CodeevalEnc> CodeevalEnc for std::collections::HashMap<K, V> { fn codeeval_enc(&self, o: &mut String) {
    o.push_str("{\"m\":["); for (i, (k, v)) in self.iter().enumerate() { if i > 0 { o.push(','); } o.push('['); k.codeeval_enc(o); o.push(','); v.codeeval_enc(o); o.push(']'); } o.push_str("]}");
} }
macro_rules! codeeval_tuple { ($($n:tt $t:ident),*) => { impl<$($t: CodeevalEnc),*> CodeevalEnc for ($($t,)*) { fn codeeval_enc(&self, o: &mut String) {
    o.push_str("{\"t\":["); let mut first = true; $( if !first { o.push(','); } first = false; self.$n.codeeval_enc(o); )* let _ = first; o.push_str("]}");
} } } }
codeeval_tuple!(0 A);
codeeval_tuple!(0 A, 1 B);
codeeval_tuple!(0 A, 1 B, 2 C);
codeeval_tuple!(0 A, 1 B, 2 C, 3 D);
fn codeeval_str(o: &mut String, s: &str) {
    o.push('"');
    for c in s.chars() {
        match c { '"' => o.push_str("\\\""), '\\' => o.push_str("\\\\"), c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)), c => o.push(c) }
    }
    o.push('"');
}
fn codeeval_panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() { return format!("panic: {}", s); }
    if let Some(s) = p.downcast_ref::<String>() { return format!("panic: {}", s); }
    String::from("panic: (no message)")
}
"""

RUST_MAIN = r"""fn main() {
    use std::io::Write;
    let mut nonce = String::new();
    std::io::stdin().read_line(&mut nonce).unwrap();
    let nonce = nonce.trim_end().to_string();
    let args: Vec<String> = std::env::args().collect();
    let start: usize = args[1].parse().unwrap();
    let fd: i32 = args[2].parse().unwrap();
    let mut out = unsafe { <std::fs::File as std::os::unix::io::FromRawFd>::from_raw_fd(fd) };
    out.write_all(format!("{{\"n\":\"{}\",\"ready\":true}}\n", nonce).as_bytes()).unwrap();
    std::panic::set_hook(Box::new(|_| {}));
    for i in start..@COUNT@ {
        let got = std::panic::catch_unwind(|| { let mut o = String::new(); codeeval_case(i, &mut o); o });
        let line = match got {
            Ok(o) => format!("{{\"n\":\"{}\",\"c\":{},\"v\":[{}]}}\n", nonce, i, o),
            Err(p) => { let mut e = String::new(); codeeval_str(&mut e, &codeeval_panic_text(p)); format!("{{\"n\":\"{}\",\"c\":{},\"e\":{}}}\n", nonce, i, e) }
        };
        out.write_all(line.as_bytes()).unwrap();
    }
    out.write_all(format!("{{\"n\":\"{}\",\"done\":true}}\n", nonce).as_bytes()).unwrap();
}
"""
