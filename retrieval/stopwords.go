package retrieval

// stopwordID reports whether w (lower-case) is an English stop word, one of
// functionWordList, and its index there: one lookup of its bytes packed as
// nextWord packs a word's key. The list is small on purpose: function words
// that carry no topic. Negations ("not", "no") are kept because error
// messages depend on them ("not found").
func stopwordID(w []byte) (uint8, bool) {
	if len(w) > 8 {
		return 0, false
	}
	var key uint64
	for i, c := range w {
		if c == 0 {
			return 0, false // the key would not tell "a\x00" from "a"
		}
		key |= uint64(c) << (8 * i)
	}
	return functionWordID(key)
}

// functionWordList holds the stop words in a fixed order:
// bit i of a FunctionWords is functionWordList[i].
var functionWordList = [...]string{
	"a", "about", "after", "again", "all", "also", "am", "an", "and", "any",
	"are", "as", "at", "be", "been", "before", "being", "both", "but", "by", "can", "could", "did",
	"do", "does", "doing", "don't", "each", "few", "for", "from", "further", "had", "has", "have",
	"having", "he", "her", "here", "hers", "him", "his", "how", "i", "i'm", "i've", "if", "in",
	"into", "is", "it", "it's", "its", "itself", "just", "me", "more", "most", "my", "myself", "of",
	"on", "once", "only", "or", "other", "our", "ours", "out", "own", "same", "she", "should", "so",
	"some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this",
	"those", "through", "to", "too", "very", "was", "we", "were", "what", "when", "where", "which",
	"while", "who", "whom", "why", "will", "with", "would", "you", "your", "yours",
}
