package kafka

import "fmt"

// TopicNameMaxLen is the longest topic name Kafka accepts.
const TopicNameMaxLen = 249

// ValidateTopicName checks name against Kafka's rule for topic names: 1 to
// 249 ASCII letters, digits, '.', '_' and '-', and neither "." nor "..".
// A route to a name Kafka refuses would fail every event routed to it.
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) > TopicNameMaxLen:
		return fmt.Errorf("topic name %.20q... is %d characters long, Kafka allows %d", name, len(name), TopicNameMaxLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q: Kafka allows only ASCII letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}
