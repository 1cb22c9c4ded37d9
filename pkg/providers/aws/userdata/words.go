package userdata

import (
	"fmt"
	"strings"
)

// shellCommands splits a shell script into commands (at unquoted newlines, ';' and '&&') of words, reading
// quotes, backslash escapes, line continuations and comments as a POSIX shell does. Expansions are not
// performed.
func shellCommands(script string) ([][]string, error) {
	var commands [][]string
	var words []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() {
		endWord()
		if len(words) > 0 {
			commands = append(commands, words)
			words = nil
		}
	}
	runes := []rune(script)
	for i := 0; i < len(runes); i++ {
		c := runes[i]
		switch {
		case c == '\\':
			if i+1 < len(runes) && runes[i+1] == '\n' {
				i++
				continue
			}
			if i+1 < len(runes) {
				i++
				word.WriteRune(runes[i])
				inWord = true
			}
		case c == '\'':
			end := indexRune(runes, i+1, '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			word.WriteString(string(runes[i+1 : end]))
			inWord = true
			i = end
		case c == '"':
			j := i + 1
			for ; j < len(runes) && runes[j] != '"'; j++ {
				if runes[j] == '\\' && j+1 < len(runes) && strings.ContainsRune("\"\\$`\n", runes[j+1]) {
					j++
					if runes[j] == '\n' {
						continue
					}
				}
				word.WriteRune(runes[j])
			}
			if j >= len(runes) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			inWord = true
			i = j
		case c == '#' && !inWord:
			for i < len(runes) && runes[i] != '\n' {
				i++
			}
			endCommand()
		case c == '\n' || c == ';':
			endCommand()
		case c == '&' && i+1 < len(runes) && runes[i+1] == '&':
			i++
			endCommand()
		case c == ' ' || c == '\t' || c == '\r':
			endWord()
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	endCommand()
	return commands, nil
}

func indexRune(runes []rune, from int, r rune) int {
	for i := from; i < len(runes); i++ {
		if runes[i] == r {
			return i
		}
	}
	return -1
}

// powershellWords splits one PowerShell command line into words: single-quoted strings (a doubled single quote
// is one quote), double-quoted strings (` escapes) and bare words.
func powershellWords(line string) ([]string, error) {
	var words []string
	runes := []rune(line)
	for i := 0; i < len(runes); {
		c := runes[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for ; ; j++ {
				if j >= len(runes) {
					return nil, fmt.Errorf("unterminated single quote")
				}
				if runes[j] == '\'' {
					if j+1 < len(runes) && runes[j+1] == '\'' {
						b.WriteRune('\'')
						j++
						continue
					}
					break
				}
				b.WriteRune(runes[j])
			}
			words = append(words, b.String())
			i = j + 1
		case c == '"':
			var b strings.Builder
			j := i + 1
			for ; j < len(runes) && runes[j] != '"'; j++ {
				if runes[j] == '`' && j+1 < len(runes) {
					j++
				}
				b.WriteRune(runes[j])
			}
			if j >= len(runes) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			words = append(words, b.String())
			i = j + 1
		default:
			j := i
			for j < len(runes) && runes[j] != ' ' && runes[j] != '\t' {
				j++
			}
			words = append(words, string(runes[i:j]))
			i = j
		}
	}
	return words, nil
}
