package record

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// topicRouter is Kafka Connect's RegexRouter as the Outbox Event Router
// configures it (route.topic.regex, route.topic.replacement), applied to
// the routing value: when the regex matches the whole value
// (Matcher.matches), the topic is Matcher.replaceFirst(replacement),
// which replaces the first match find() makes (not necessarily the whole
// value: a reluctant regex can match less), keeping the text around it;
// otherwise the value itself is the topic.
type topicRouter struct {
	whole *regexp.Regexp // \A(?:regex)\z
	first *regexp.Regexp // regex, for the first match
	parts []replacementPart
}

// replacementPart is a piece of the replacement: literal text, or the
// text of a group (group >= 0; empty when the group did not take part).
type replacementPart struct {
	literal string
	group   int
}

// javaLineTerminators is what Java's '.' does not match without DOTALL
// (Go's '.' refuses only '\n').
var javaLineTerminators = []rune{'\n', '\r', 0x85, 0x2028, 0x2029}

// compileJavaRegex compiles regex, a Java regular expression, into Go
// regexps that match what java.util.regex.Pattern matches, for the
// syntax the two share. '.' is rewritten to exclude Java's line
// terminators. Syntax only Go reads ((?P<name>...), the U flag, which
// Java reads as UNICODE_CHARACTER_CLASS) and group names Java refuses
// are errors, as is syntax only Java reads (lookaround, back references,
// possessive quantifiers). Left alone, as no topic name can hold the
// characters concerned: Java's \s also matches \x0B, its $ also matches
// before a final line terminator, and its (?i) folds ASCII only.
func compileJavaRegex(regex string) (*topicRouter, error) {
	if p := goOnlyRegexSyntax(regex); p != "" {
		return nil, errors.New(p)
	}
	re, err := syntax.Parse(regex, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("does not compile (herald reads the Java regular expressions Go's regexp also reads): %v", err)
	}
	if err := javaRegexRewrite(re); err != nil {
		return nil, err
	}
	src := re.String()
	whole, err := regexp.Compile(`\A(?:` + src + `)\z`)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	first, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("does not compile: %v", err)
	}
	return &topicRouter{whole: whole, first: first}, nil
}

// goOnlyRegexSyntax names syntax Go reads and Java refuses or reads
// otherwise, or returns "".
func goOnlyRegexSyntax(regex string) string {
	for i := 0; i < len(regex); i++ {
		switch {
		case regex[i] == '\\':
			if strings.HasPrefix(regex[i:], `\Q`) {
				end := strings.Index(regex[i+2:], `\E`)
				if end < 0 {
					return ""
				}
				i += 2 + end + 1
				continue
			}
			i++
		case strings.HasPrefix(regex[i:], "(?P<"):
			return "uses (?P<name>...), which Java refuses: write (?<name>...)"
		case strings.HasPrefix(regex[i:], "(?"):
			j := i + 2
			for j < len(regex) && (regex[j] >= 'a' && regex[j] <= 'z' || regex[j] >= 'A' && regex[j] <= 'Z' || regex[j] == '-') {
				j++
			}
			if j < len(regex) && (regex[j] == ')' || regex[j] == ':') && strings.Contains(regex[i+2:j], "U") {
				return "uses the U flag, which is UNICODE_CHARACTER_CLASS in Java but ungreedy in Go"
			}
		}
	}
	return ""
}

// javaRegexRewrite checks re's group names against Java's rule and makes
// its '.' Java's.
func javaRegexRewrite(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpCapture:
		if re.Name != "" && !javaGroupName(re.Name) {
			return fmt.Errorf("names a group %q, which Java refuses (a group name is an ASCII letter, then letters and digits)", re.Name)
		}
	case syntax.OpAnyCharNotNL:
		re.Op = syntax.OpCharClass
		re.Rune = javaDotClass()
	}
	for _, sub := range re.Sub {
		if err := javaRegexRewrite(sub); err != nil {
			return err
		}
	}
	return nil
}

// javaDotClass is the class of every rune but Java's line terminators, as
// sorted ranges.
func javaDotClass() []rune {
	var class []rune
	lo := rune(0)
	for _, t := range javaLineTerminators {
		if t > lo {
			class = append(class, lo, t-1)
		}
		lo = t + 1
	}
	return append(class, lo, utf8.MaxRune)
}

func javaGroupName(name string) bool {
	for i, c := range name {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return name != ""
}

// parseJavaReplacement reads replacement as Matcher.appendReplacement
// does: a backslash quotes the next character; ${name} is a named group
// (ASCII letters and digits, not starting with a digit); $ and digits a
// numbered group, taking as many digits as still name a group of regex
// ($0 is the whole match). What Java would throw on, at the first routed
// record, is an error here.
func parseJavaReplacement(replacement string, r *topicRouter) ([]replacementPart, error) {
	var parts []replacementPart
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, replacementPart{literal: lit.String(), group: -1})
			lit.Reset()
		}
	}
	groups := r.first.NumSubexp()
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
	for i := 0; i < len(replacement); {
		c := replacement[i]
		switch c {
		case '\\':
			i++
			if i >= len(replacement) {
				return nil, errors.New(`ends with a lone backslash (Java: "character to be escaped is missing")`)
			}
			_, size := utf8.DecodeRuneInString(replacement[i:])
			lit.WriteString(replacement[i : i+size])
			i += size
		case '$':
			i++
			if i >= len(replacement) {
				return nil, errors.New(`ends with $ (Java: "group index is missing"); write \$ for a dollar sign`)
			}
			group := 0
			if replacement[i] == '{' {
				i++
				start := i
				for i < len(replacement) && (isDigit(replacement[i]) || replacement[i]|0x20 >= 'a' && replacement[i]|0x20 <= 'z') {
					i++
				}
				name := replacement[start:i]
				switch {
				case name == "":
					return nil, errors.New("has ${ without a group name")
				case i >= len(replacement) || replacement[i] != '}':
					return nil, fmt.Errorf("has ${%s without its closing }", name)
				case isDigit(name[0]):
					return nil, fmt.Errorf("has ${%s}, a group name starting with a digit", name)
				}
				i++
				if group = r.first.SubexpIndex(name); group < 0 {
					return nil, fmt.Errorf("refers to ${%s}, which is not a group of RouteTopicRegex", name)
				}
			} else {
				if !isDigit(replacement[i]) {
					return nil, fmt.Errorf("has $ followed by %q, not a group number or {name}; write \\$ for a dollar sign", replacement[i])
				}
				group = int(replacement[i] - '0')
				i++
				for i < len(replacement) && isDigit(replacement[i]) {
					next := group*10 + int(replacement[i]-'0')
					if next > groups {
						break
					}
					group = next
					i++
				}
				if group > groups {
					return nil, fmt.Errorf("refers to group $%d, but RouteTopicRegex has %d groups", group, groups)
				}
			}
			flush()
			parts = append(parts, replacementPart{group: group})
		default:
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	for _, p := range parts {
		if p.group < 0 {
			if bad := strings.IndexFunc(p.literal, func(c rune) bool { return !topicChar(c) }); bad >= 0 {
				c, _ := utf8.DecodeRuneInString(p.literal[bad:])
				return nil, fmt.Errorf("contains %q, which no Kafka topic name may (only ASCII letters, digits, '.', '_' and '-')", c)
			}
		}
	}
	return parts, nil
}

// route returns the topic of a record whose routing value is v.
func (r *topicRouter) route(v string) string {
	if !r.whole.MatchString(v) {
		return v
	}
	m := r.first.FindStringSubmatchIndex(v)
	if m == nil { // cannot be: the whole value matches
		return v
	}
	var b strings.Builder
	b.WriteString(v[:m[0]])
	for _, p := range r.parts {
		if p.group < 0 {
			b.WriteString(p.literal)
		} else if m[2*p.group] >= 0 {
			b.WriteString(v[m[2*p.group]:m[2*p.group+1]])
		}
	}
	b.WriteString(v[m[1]:])
	return b.String()
}

// kafkaTopicMaxLen is the longest topic name Kafka accepts.
const kafkaTopicMaxLen = 249

func topicChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

// checkTopic says what makes t an invalid Kafka topic name
// (org.apache.kafka.common.internals.Topic.validate), or returns nil.
func checkTopic(t string) error {
	switch {
	case t == "":
		return errors.New("is empty")
	case t == "." || t == "..":
		return fmt.Errorf("%q is not a topic name Kafka accepts", t)
	}
	if bad := strings.IndexFunc(t, func(c rune) bool { return !topicChar(c) }); bad >= 0 {
		c, _ := utf8.DecodeRuneInString(t[bad:])
		return fmt.Errorf("contains %q: a Kafka topic name has only ASCII letters, digits, '.', '_' and '-'", c)
	}
	if len(t) > kafkaTopicMaxLen {
		return fmt.Errorf("is %d characters long, more than Kafka's %d", len(t), kafkaTopicMaxLen)
	}
	return nil
}
