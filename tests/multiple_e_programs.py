"""Hand-written solutions of MultiPL-E problems in its four languages, and wrong variants.

MultiPL-E ships no reference solutions. Each entry is a completion as a model would write it
after MultiPL-E's prompt (the function body and its closing brace). :func:`wrong_variants`
makes wrong programs from them by small mutations (a flipped comparison, an off-by-one, a
swapped boolean), the kind of mistakes the agreement test must judge as MultiPL-E does.
"""

from __future__ import annotations

import re

JS = {
    "HumanEval_0_": """  for (let i = 0; i < numbers.length; i++)
    for (let j = 0; j < numbers.length; j++)
      if (i != j && Math.abs(numbers[i] - numbers[j]) < threshold) return true;
  return false;
}
""",
    "HumanEval_2_": "  return number % 1.0;\n}\n",
    "HumanEval_3_": """  let balance = 0;
  for (const op of operations) { balance += op; if (balance < 0) return true; }
  return false;
}
""",
    "HumanEval_4_": """  const mean = numbers.reduce((a, b) => a + b, 0) / numbers.length;
  return numbers.reduce((a, b) => a + Math.abs(b - mean), 0) / numbers.length;
}
""",
    "HumanEval_8_": """  let s = 0, p = 1;
  for (const n of numbers) { s += n; p *= n; }
  return [s, p];
}
""",
    "HumanEval_11_": """  let out = "";
  for (let i = 0; i < a.length; i++) out += a[i] == b[i] ? "0" : "1";
  return out;
}
""",
    "HumanEval_12_": """  if (strings.length == 0) return undefined;
  let best = strings[0];
  for (const s of strings) if (s.length > best.length) best = s;
  return best;
}
""",
    "HumanEval_13_": """  while (b != 0) { const t = a % b; a = b; b = t; }
  return a;
}
""",
    "HumanEval_20_": """  let best = null;
  for (let i = 0; i < numbers.length; i++)
    for (let j = 0; j < numbers.length; j++)
      if (i != j) {
        const d = Math.abs(numbers[i] - numbers[j]);
        if (best === null || d < best[0]) best = [d, Math.min(numbers[i], numbers[j]), Math.max(numbers[i], numbers[j])];
      }
  return [best[1], best[2]];
}
""",
    "HumanEval_22_": "  return values.filter((v) => Number.isInteger(v));\n}\n",
    "HumanEval_23_": "  return string.length;\n}\n",
    "HumanEval_29_": "  return strings.filter((s) => s.startsWith(prefix));\n}\n",
    "HumanEval_34_": "  return [...new Set(l)].sort((x, y) => x - y);\n}\n",
    "HumanEval_45_": "  return a * h / 2.0;\n}\n",
    "HumanEval_87_": """  const out = [];
  for (let i = 0; i < lst.length; i++) {
    const row = [];
    for (let j = 0; j < lst[i].length; j++) if (lst[i][j] == x) row.push([i, j]);
    row.sort((p, q) => q[1] - p[1]);
    out.push(...row);
  }
  return out;
}
""",
    "HumanEval_107_": """  let even = 0, odd = 0;
  for (let i = 1; i <= n; i++) {
    const s = String(i);
    if (s == s.split("").reverse().join("")) { if (i % 2 == 0) even++; else odd++; }
  }
  return [even, odd];
}
""",
    "HumanEval_111_": """  const counts = {};
  for (const w of test.split(" ")) if (w) counts[w] = (counts[w] || 0) + 1;
  const most = Math.max(0, ...Object.values(counts));
  const out = {};
  for (const k in counts) if (counts[k] == most) out[k] = most;
  return out;
}
""",
    "HumanEval_136_": """  const neg = lst.filter((x) => x < 0), pos = lst.filter((x) => x > 0);
  return [neg.length ? Math.max(...neg) : undefined, pos.length ? Math.min(...pos) : undefined];
}
""",
    "HumanEval_151_": """  let s = 0;
  for (const x of lst) if (x > 0 && Number.isInteger(x) && x % 2 == 1) s += x * x;
  return s;
}
""",
}

CPP = {
    "HumanEval_0_": """    for (size_t i = 0; i < numbers.size(); i++)
        for (size_t j = 0; j < numbers.size(); j++)
            if (i != j && std::abs(numbers[i] - numbers[j]) < threshold) return true;
    return false;
}
""",
    "HumanEval_2_": "    return number - (long)number;\n}\n",
    "HumanEval_3_": """    long balance = 0;
    for (long op : operations) { balance += op; if (balance < 0) return true; }
    return false;
}
""",
    "HumanEval_4_": """    float mean = 0;
    for (float x : numbers) mean += x;
    mean /= numbers.size();
    float total = 0;
    for (float x : numbers) total += std::abs(x - mean);
    return total / numbers.size();
}
""",
    "HumanEval_8_": """    long s = 0, p = 1;
    for (long n : numbers) { s += n; p *= n; }
    return std::make_tuple(s, p);
}
""",
    "HumanEval_11_": """    std::string out;
    for (size_t i = 0; i < a.size(); i++) out += a[i] == b[i] ? '0' : '1';
    return out;
}
""",
    "HumanEval_12_": """    if (strings.empty()) return std::nullopt;
    std::string best = strings[0];
    for (auto& s : strings) if (s.size() > best.size()) best = s;
    return best;
}
""",
    "HumanEval_13_": """    while (b != 0) { long t = a % b; a = b; b = t; }
    return a;
}
""",
    "HumanEval_20_": """    float bd = -1, lo = 0, hi = 0;
    for (size_t i = 0; i < numbers.size(); i++)
        for (size_t j = 0; j < numbers.size(); j++)
            if (i != j) {
                float d = std::abs(numbers[i] - numbers[j]);
                if (bd < 0 || d < bd) { bd = d; lo = std::min(numbers[i], numbers[j]); hi = std::max(numbers[i], numbers[j]); }
            }
    return std::make_tuple(lo, hi);
}
""",
    "HumanEval_22_": """    std::vector<long> out;
    for (auto& v : values) if (v.type() == typeid(long)) out.push_back(std::any_cast<long>(v));
    return out;
}
""",
    "HumanEval_23_": "    return string.size();\n}\n",
    "HumanEval_29_": """    std::vector<std::string> out;
    for (auto& s : strings) if (s.rfind(prefix, 0) == 0) out.push_back(s);
    return out;
}
""",
    "HumanEval_34_": """    std::set<long> s(l.begin(), l.end());
    return std::vector<long>(s.begin(), s.end());
}
""",
    "HumanEval_45_": "    return a * h / 2.0;\n}\n",
    "HumanEval_87_": """    std::vector<std::tuple<long, long>> out;
    for (long i = 0; i < (long)lst.size(); i++)
        for (long j = (long)lst[i].size() - 1; j >= 0; j--)
            if (lst[i][j] == x) out.push_back(std::make_tuple(i, j));
    return out;
}
""",
    "HumanEval_107_": """    long even = 0, odd = 0;
    for (long i = 1; i <= n; i++) {
        std::string s = std::to_string(i), r(s.rbegin(), s.rend());
        if (s == r) { if (i % 2 == 0) even++; else odd++; }
    }
    return std::make_tuple(even, odd);
}
""",
    "HumanEval_111_": """    std::map<std::string, long> counts;
    std::stringstream ss(test);
    std::string w;
    long most = 0;
    while (ss >> w) most = std::max(most, ++counts[w]);
    std::map<std::string, long> out;
    for (auto& kv : counts) if (kv.second == most) out[kv.first] = most;
    return out;
}
""",
    "HumanEval_136_": """    std::optional<long> neg, pos;
    for (long x : lst) {
        if (x < 0 && (!neg || x > *neg)) neg = x;
        if (x > 0 && (!pos || x < *pos)) pos = x;
    }
    return std::make_tuple(neg, pos);
}
""",
    "HumanEval_151_": """    long s = 0;
    for (float x : lst) if (x > 0 && x == (long)x && (long)x % 2 == 1) s += (long)x * (long)x;
    return s;
}
""",
}

JAVA = {
    "HumanEval_0_": """        for (int i = 0; i < numbers.size(); i++)
            for (int j = 0; j < numbers.size(); j++)
                if (i != j && Math.abs(numbers.get(i) - numbers.get(j)) < threshold) return true;
        return false;
    }
""",
    "HumanEval_2_": "        return number % 1.0f;\n    }\n",
    "HumanEval_3_": """        long balance = 0;
        for (long op : operations) { balance += op; if (balance < 0) return true; }
        return false;
    }
""",
    "HumanEval_4_": """        float mean = 0;
        for (float x : numbers) mean += x;
        mean /= numbers.size();
        float total = 0;
        for (float x : numbers) total += Math.abs(x - mean);
        return total / numbers.size();
    }
""",
    "HumanEval_8_": """        long s = 0, p = 1;
        for (long n : numbers) { s += n; p *= n; }
        return Pair.with(s, p);
    }
""",
    "HumanEval_11_": """        StringBuilder out = new StringBuilder();
        for (int i = 0; i < a.length(); i++) out.append(a.charAt(i) == b.charAt(i) ? '0' : '1');
        return out.toString();
    }
""",
    "HumanEval_12_": """        if (strings.isEmpty()) return Optional.empty();
        String best = strings.get(0);
        for (String s : strings) if (s.length() > best.length()) best = s;
        return Optional.of(best);
    }
""",
    "HumanEval_13_": """        while (b != 0) { long t = a % b; a = b; b = t; }
        return a;
    }
""",
    "HumanEval_20_": """        float bd = -1, lo = 0, hi = 0;
        for (int i = 0; i < numbers.size(); i++)
            for (int j = 0; j < numbers.size(); j++)
                if (i != j) {
                    float d = Math.abs(numbers.get(i) - numbers.get(j));
                    if (bd < 0 || d < bd) { bd = d; lo = Math.min(numbers.get(i), numbers.get(j)); hi = Math.max(numbers.get(i), numbers.get(j)); }
                }
        return Pair.with(lo, hi);
    }
""",
    "HumanEval_22_": """        ArrayList<Long> out = new ArrayList<>();
        for (Object v : values) if (v instanceof Long) out.add((Long) v);
        return out;
    }
""",
    "HumanEval_23_": "        return string.length();\n    }\n",
    "HumanEval_29_": """        ArrayList<String> out = new ArrayList<>();
        for (String s : strings) if (s.startsWith(prefix)) out.add(s);
        return out;
    }
""",
    "HumanEval_34_": "        return new ArrayList<Long>(new TreeSet<Long>(l));\n    }\n",
    "HumanEval_45_": "        return a * h / 2.0f;\n    }\n",
    "HumanEval_87_": """        ArrayList<Pair<Long, Long>> out = new ArrayList<>();
        for (int i = 0; i < lst.size(); i++)
            for (int j = lst.get(i).size() - 1; j >= 0; j--)
                if (lst.get(i).get(j) == x) out.add(Pair.with((long) i, (long) j));
        return out;
    }
""",
    "HumanEval_107_": """        long even = 0, odd = 0;
        for (long i = 1; i <= n; i++) {
            String s = Long.toString(i);
            if (s.equals(new StringBuilder(s).reverse().toString())) { if (i % 2 == 0) even++; else odd++; }
        }
        return Pair.with(even, odd);
    }
""",
    "HumanEval_111_": """        HashMap<String, Long> counts = new HashMap<>();
        long most = 0;
        for (String w : test.split(" ")) if (!w.isEmpty()) { counts.merge(w, 1L, Long::sum); most = Math.max(most, counts.get(w)); }
        HashMap<String, Long> out = new HashMap<>();
        for (Map.Entry<String, Long> e : counts.entrySet()) if (e.getValue() == most) out.put(e.getKey(), most);
        return out;
    }
""",
    "HumanEval_136_": """        Optional<Long> neg = Optional.empty(), pos = Optional.empty();
        for (long x : lst) {
            if (x < 0 && (neg.isEmpty() || x > neg.get())) neg = Optional.of(x);
            if (x > 0 && (pos.isEmpty() || x < pos.get())) pos = Optional.of(x);
        }
        return Pair.with(neg, pos);
    }
""",
    "HumanEval_151_": """        long s = 0;
        for (float x : lst) if (x > 0 && x == (long) x && (long) x % 2 == 1) s += (long) x * (long) x;
        return s;
    }
""",
}

RUST = {
    "HumanEval_0_": """    for i in 0..numbers.len() {
        for j in 0..numbers.len() {
            if i != j && (numbers[i] - numbers[j]).abs() < threshold { return true; }
        }
    }
    false
}
""",
    "HumanEval_2_": "    number % 1.0\n}\n",
    "HumanEval_3_": """    let mut balance = 0;
    for op in operations { balance += op; if balance < 0 { return true; } }
    false
}
""",
    "HumanEval_4_": """    let mean = numbers.iter().sum::<f64>() / numbers.len() as f64;
    numbers.iter().map(|x| (x - mean).abs()).sum::<f64>() / numbers.len() as f64
}
""",
    "HumanEval_8_": """    (numbers.iter().sum(), numbers.iter().product())
}
""",
    "HumanEval_11_": """    a.chars().zip(b.chars()).map(|(x, y)| if x == y { '0' } else { '1' }).collect()
}
""",
    "HumanEval_12_": """    let mut best: Option<String> = None;
    for s in strings {
        if best.as_ref().map_or(true, |b| s.len() > b.len()) { best = Some(s); }
    }
    best
}
""",
    "HumanEval_13_": """    let (mut a, mut b) = (a, b);
    while b != 0 { let t = a % b; a = b; b = t; }
    a
}
""",
    "HumanEval_20_": """    let mut best: Option<(f64, f64, f64)> = None;
    for i in 0..numbers.len() {
        for j in 0..numbers.len() {
            if i != j {
                let d = (numbers[i] - numbers[j]).abs();
                if best.map_or(true, |b| d < b.0) { best = Some((d, numbers[i].min(numbers[j]), numbers[i].max(numbers[j]))); }
            }
        }
    }
    let b = best.unwrap();
    (b.1, b.2)
}
""",
    "HumanEval_23_": "    string.len() as isize\n}\n",
    "HumanEval_29_": """    strings.into_iter().filter(|s| s.starts_with(&prefix)).collect()
}
""",
    "HumanEval_34_": """    let mut v = l.clone();
    v.sort();
    v.dedup();
    v
}
""",
    "HumanEval_45_": "    (a * h) as f64 / 2.0\n}\n",
    "HumanEval_87_": """    let mut out = Vec::new();
    for (i, row) in lst.iter().enumerate() {
        for j in (0..row.len()).rev() {
            if row[j] == x { out.push((i as isize, j as isize)); }
        }
    }
    out
}
""",
    "HumanEval_107_": """    let (mut even, mut odd) = (0, 0);
    for i in 1..=n {
        let s = i.to_string();
        if s.chars().rev().collect::<String>() == s { if i % 2 == 0 { even += 1; } else { odd += 1; } }
    }
    (even, odd)
}
""",
    "HumanEval_111_": """    let mut counts: HashMap<String, isize> = HashMap::new();
    for w in test.split(' ').filter(|w| !w.is_empty()) { *counts.entry(w.to_string()).or_insert(0) += 1; }
    let most = counts.values().copied().max().unwrap_or(0);
    counts.into_iter().filter(|(_, c)| *c == most).collect()
}
""",
    "HumanEval_136_": """    let neg = lst.iter().filter(|x| **x < 0).max().copied();
    let pos = lst.iter().filter(|x| **x > 0).min().copied();
    (neg, pos)
}
""",
    "HumanEval_151_": """    lst.iter().filter(|x| **x > 0.0 && x.fract() == 0.0 && (**x as isize) % 2 == 1).map(|x| (*x as isize) * (*x as isize)).sum()
}
""",
}

SOLUTIONS = {"js": JS, "cpp": CPP, "java": JAVA, "rs": RUST}

_MUTATIONS = (
    (r" < ", " <= "),
    (r" > ", " >= "),
    (r"\btrue\b", "false"),
    (r"\+= 1\b", "+= 2"),
    (r" - ", " + "),
    (r"== 1\b", "== 0"),
    (r"/ 2\.0", "/ 3.0"),
    (r"\bmin\b", "max"),
)


def wrong_variants(code: str, limit: int = 3) -> list[str]:
    """Up to ``limit`` programs that differ from ``code`` by one small mutation each."""
    out = []
    for pattern, replacement in _MUTATIONS:
        mutated, count = re.subn(pattern, replacement, code, count=1)
        if count and mutated != code:
            out.append(mutated)
        if len(out) == limit:
            break
    return out
