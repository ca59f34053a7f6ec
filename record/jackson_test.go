package record

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestJacksonText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"plain", "order-42", `"order-42"`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		// CharTypes.sOutputEscapes128: short forms for five controls,
		// \u00XX with upper-case hex for the rest; '/' and DEL as they are.
		{"short escapes", "\b\t\n\f\r", `"\b\t\n\f\r"`},
		{"other controls", "\x00\x01\x1a\x1f", `"\u0000\u0001\u001A\u001F"`},
		{"slash and DEL", "/\x7f", "\"/\x7f\""},
		{"two and three byte characters as UTF-8", "é€\u2028", "\"é€\u2028\""},
		// UTF8JsonGenerator._outputMultiByteChar: a surrogate is escaped
		// (COMBINE_UNICODE_SURROGATES_IN_UTF8 is off).
		{"beyond U+FFFF as two escapes", "😀𝄞", `"\uD83D\uDE00\uD834\uDD1E"`},
		{"invalid UTF-8 as U+FFFD", "a\xffb", "\"a\uFFFDb\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(appendJacksonText(nil, []byte(tt.in))); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestJavaDouble(t *testing.T) {
	sum := 0.1
	sum += 0.2
	tests := []struct {
		in   float64
		want string
	}{
		{1, "1.0"},
		{1.1, "1.1"},
		{-2.5, "-2.5"},
		{100, "100.0"},
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{0.001, "0.001"},
		{0.000999, "9.99E-4"},
		{0.0001, "1.0E-4"},
		{1e-5, "1.0E-5"},
		{123456.789, "123456.789"},
		{9999999, "9999999.0"},
		{1e7, "1.0E7"},
		{12345678.9, "1.23456789E7"},
		{1e20, "1.0E20"},
		{sum, "0.30000000000000004"},
		{math.MaxFloat64, "1.7976931348623157E308"},
		{math.Pow(2, 63), "9.223372036854776E18"},
		// Java 17's FloatingDecimal, not the shortest decimal (Java 19+):
		// an integer below 2^63 printed exactly but for its insignificant
		// digits, and the free-format algorithm's quirks.
		{1e23, "9.999999999999999E22"},
		{3.46e22, "3.4599999999999998E22"},
		{9.665480871158418e17, "9.6654808711584179E17"},
		{math.Pow(2, 53) + 2, "9.007199254740994E15"},
		{math.SmallestNonzeroFloat64, "4.9E-324"},
		{2 * math.SmallestNonzeroFloat64, "1.0E-323"},
		{math.Inf(1), "Infinity"},
		{math.Inf(-1), "-Infinity"},
	}
	for _, tt := range tests {
		if got := string(appendJavaDouble(nil, tt.in)); got != tt.want {
			t.Errorf("Double.toString(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
	if got := string(appendJacksonDouble(nil, math.Inf(1))); got != `"Infinity"` {
		t.Errorf("Jackson writes infinity as %s, want the string \"Infinity\"", got)
	}
}

func TestJacksonTree(t *testing.T) {
	long := func(n int) string { return strings.Repeat("1", n) }
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"object", `{"a":[1,2.5,"x",true,false,null,{}]}`, true},
		{"white space Jackson skips", "{ \t\r\n\"a\" \n: 1 }", true},
		// readTree reads one value: FAIL_ON_TRAILING_TOKENS is off.
		{"text after the value is never read", `{"a":1} ]]] garbage`, true},
		{"lone surrogate escape", `{"a":"\ud800"}`, true},
		{"leading zero", `[01]`, false},
		{"negative leading zero", `[-01]`, false},
		{"minus zero", `[-0]`, true},
		{"decimal point without digits", `[1.]`, false},
		{"leading decimal point", `[.5]`, false},
		{"plus sign", `[+1]`, false},
		{"exponent without digits", `[1e]`, false},
		{"NaN", `[NaN]`, false},
		{"trailing comma in an array", `[1,]`, false},
		{"trailing comma in an object", `{"a":1,}`, false},
		{"missing value", `[1,,2]`, false},
		{"single quotes", `{'a':1}`, false},
		{"unquoted name", `{a:1}`, false},
		{"comment", `{/*c*/"a":1}`, false},
		{"unescaped control character", "{\"a\":\"x\ty\"}", false},
		{"unknown escape", `{"a":"\x"}`, false},
		{"short unicode escape", `{"a":"\u12"}`, false},
		{"vertical tab is not white space", "{\v}", false},
		{"non-breaking space is not white space", "{\u00a0}", false},
		{"word after a literal", `[truex]`, false},
		{"unclosed", `{"a":1`, false},
		// StreamReadConstraints: numbers of 1,000 digits (a float's
		// absent fraction or exponent counts 0, or -1 when the number
		// starts with 0: ReaderBasedJsonParser._parseNumber2); names of
		// 50,000 chars; 1,000 levels.
		{"1000-digit integer", "[" + long(1000) + "]", true},
		{"1001-digit integer", "[" + long(1001) + "]", false},
		{"999 digits and an exponent", "[" + long(999) + "e1]", true},
		{"1000 digits and an exponent", "[" + long(1000) + "e1]", false},
		{"0, a point and 1000 digits", "[0." + long(1000) + "]", true},
		{"0, a point and 1001 digits", "[0." + long(1001) + "]", false},
		{"1000 digits and a point", "[" + long(999) + ".1]", true},
		{"1001 digits and a point", "[" + long(1000) + ".1]", false},
		{"50000-character name", `{"` + strings.Repeat("n", 50_000) + `":1}`, true},
		{"50001-character name", `{"` + strings.Repeat("n", 50_001) + `":1}`, false},
		{"1000 levels", strings.Repeat("[", 1000) + strings.Repeat("]", 1000), true},
		{"1001 levels", strings.Repeat("[", 1001) + strings.Repeat("]", 1001), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseJacksonTree([]byte(tt.in))
			if (err == nil) != tt.ok {
				t.Errorf("parse: %v, want ok %v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, errJackson) {
				t.Errorf("error %v is not errJackson", err)
			}
		})
	}
}

func TestJacksonTreeValues(t *testing.T) {
	n, err := parseJacksonTree([]byte(`{"b":2147483647,"a":2147483648,"b":-9223372036854775808,"c":9223372036854775808,"d":1E0,"e":"\u00e9\ud83d\ude00"}`))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range n.members {
		keys = append(keys, string(javaUTF8(m.name)))
	}
	// A duplicate keeps its first place and takes the last value
	// (ObjectNode.replace on a LinkedHashMap).
	if got := strings.Join(keys, ","); got != "b,a,c,d,e" {
		t.Errorf("members %s, want b,a,c,d,e", got)
	}
	tests := []struct {
		key     string
		num     numberKind
		integer int64
	}{
		{"b", numberLong, math.MinInt64},
		{"a", numberLong, 2147483648},
		{"c", numberBigInteger, 0},
		{"d", numberDouble, 0},
	}
	for _, tt := range tests {
		m := n.member(javaKey(javaString([]byte(tt.key))))
		if m == nil || m.kind != jsonNumber || m.num != tt.num || m.integer != tt.integer {
			t.Errorf("%s = %+v, want number kind %d value %d", tt.key, m, tt.num, tt.integer)
		}
	}
	if e := n.member(javaKey(javaString([]byte("e")))); e == nil || string(javaUTF8(e.str)) != "é😀" || len(e.str) != 3 {
		t.Errorf("e = %+v, want é😀 in three UTF-16 units", e)
	}
	if got := string(javaUTF8([]uint16{'a', 0xD800, 'b'})); got != "a?b" {
		t.Errorf("a lone surrogate in getBytes(UTF_8) = %q, want a?b", got)
	}
}
