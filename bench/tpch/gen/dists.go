package gen

// The value lists of TPC-H clause 4.2.2.13 and the word lists and
// grammar of the text pool, clause 4.2.2.14, with the weights the
// specification's reference distributions give them.

// colors are the 92 words of P_NAME (clause 4.2.3, "P_NAME").
var colors = [...]string{
	"almond", "antique", "aquamarine", "azure", "beige", "bisque", "black",
	"blanched", "blue", "blush", "brown", "burlywood", "burnished",
	"chartreuse", "chiffon", "chocolate", "coral", "cornflower", "cornsilk",
	"cream", "cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick",
	"floral", "forest", "frosted", "gainsboro", "ghost", "goldenrod", "green",
	"grey", "honeydew", "hot", "indian", "ivory", "khaki", "lace", "lavender",
	"lawn", "lemon", "light", "lime", "linen", "magenta", "maroon", "medium",
	"metallic", "midnight", "mint", "misty", "moccasin", "navajo", "navy",
	"olive", "orange", "orchid", "pale", "papaya", "peach", "peru", "pink",
	"plum", "powder", "puff", "purple", "red", "rose", "rosy", "royal",
	"saddle", "salmon", "sandy", "seashell", "sienna", "sky", "slate",
	"smoke", "snow", "spring", "steel", "tan", "thistle", "tomato",
	"turquoise", "violet", "wheat", "white", "yellow",
}

// The three syllables of P_TYPE.
var (
	typeSyllable1 = [...]string{"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"}
	typeSyllable2 = [...]string{"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"}
	typeSyllable3 = [...]string{"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"}
)

// The two syllables of P_CONTAINER.
var (
	containerSyllable1 = [...]string{"SM", "LG", "MED", "JUMBO", "WRAP"}
	containerSyllable2 = [...]string{"CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"}
)

var (
	segments     = [...]string{"AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"}
	priorities   = [...]string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
	instructions = [...]string{"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"}
	modes        = [...]string{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"}
)

// regions and nations are the fixed rows of REGION and NATION (clause
// 4.2.3): the key of each is its index.
var regions = [...]string{"AFRICA", "AMERICA", "ASIA", "EUROPE", "MIDDLE EAST"}

var nations = [...]struct {
	name   string
	region int
}{
	{"ALGERIA", 0}, {"ARGENTINA", 1}, {"BRAZIL", 1}, {"CANADA", 1},
	{"EGYPT", 4}, {"ETHIOPIA", 0}, {"FRANCE", 3}, {"GERMANY", 3},
	{"INDIA", 2}, {"INDONESIA", 2}, {"IRAN", 4}, {"IRAQ", 4},
	{"JAPAN", 2}, {"JORDAN", 4}, {"KENYA", 0}, {"MOROCCO", 0},
	{"MOZAMBIQUE", 0}, {"PERU", 1}, {"CHINA", 2}, {"ROMANIA", 3},
	{"SAUDI ARABIA", 4}, {"VIETNAM", 2}, {"RUSSIA", 3},
	{"UNITED KINGDOM", 3}, {"UNITED STATES", 1},
}

// A weighted is a list of words, each drawn with a probability in
// proportion to its weight.
type weighted struct {
	words []string
	cum   []uint64 // running sums of the weights
}

type w struct {
	word   string
	weight uint64
}

func newWeighted(ws ...w) *weighted {
	d := &weighted{}
	var sum uint64
	for _, x := range ws {
		sum += x.weight
		d.words = append(d.words, x.word)
		d.cum = append(d.cum, sum)
	}
	return d
}

// pick draws a word.
func (d *weighted) pick(s *stream) string {
	r := s.intn(d.cum[len(d.cum)-1])
	lo, hi := 0, len(d.cum)-1
	for lo < hi {
		m := (lo + hi) / 2
		if d.cum[m] > r {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return d.words[lo]
}

var (
	nouns = newWeighted(
		w{"packages", 40}, w{"requests", 40}, w{"accounts", 40}, w{"deposits", 40},
		w{"foxes", 20}, w{"ideas", 20}, w{"theodolites", 20}, w{"pinto beans", 20},
		w{"instructions", 20}, w{"dependencies", 10}, w{"excuses", 10},
		w{"platelets", 10}, w{"asymptotes", 10}, w{"courts", 5}, w{"dolphins", 5},
		w{"multipliers", 1}, w{"sauternes", 1}, w{"warthogs", 1}, w{"frets", 1},
		w{"dinos", 1}, w{"attainments", 1}, w{"somas", 1}, w{"Tiresias", 1},
		w{"patterns", 1}, w{"forges", 1}, w{"braids", 1}, w{"frays", 1},
		w{"warhorses", 1}, w{"dugouts", 1}, w{"notornis", 1}, w{"epitaphs", 1},
		w{"pearls", 1}, w{"tithes", 1}, w{"waters", 1}, w{"orbits", 1},
		w{"gifts", 1}, w{"sheaves", 1}, w{"depths", 1}, w{"sentiments", 1},
		w{"decoys", 1}, w{"realms", 1}, w{"pains", 1}, w{"grouches", 1},
		w{"escapades", 1}, w{"hockey players", 1},
	)
	verbs = newWeighted(
		w{"sleep", 20}, w{"wake", 20}, w{"are", 20}, w{"cajole", 20},
		w{"haggle", 20}, w{"nag", 10}, w{"use", 10}, w{"boost", 10},
		w{"affix", 5}, w{"detect", 5}, w{"integrate", 5}, w{"maintain", 1},
		w{"nod", 1}, w{"was", 1}, w{"lose", 1}, w{"sublate", 1}, w{"solve", 1},
		w{"thrash", 1}, w{"promise", 1}, w{"engage", 1}, w{"hinder", 1},
		w{"print", 1}, w{"x-ray", 1}, w{"breach", 1}, w{"eat", 1}, w{"grow", 1},
		w{"impress", 1}, w{"mold", 1}, w{"poach", 1}, w{"serve", 1}, w{"run", 1},
		w{"dazzle", 1}, w{"snooze", 1}, w{"doze", 1}, w{"unwind", 1},
		w{"kindle", 1}, w{"play", 1}, w{"hang", 1}, w{"believe", 1}, w{"doubt", 1},
	)
	adverbs = newWeighted(
		w{"sometimes", 1}, w{"always", 1}, w{"never", 1}, w{"furiously", 50},
		w{"slyly", 50}, w{"carefully", 50}, w{"blithely", 40}, w{"quickly", 30},
		w{"fluffily", 20}, w{"slowly", 1}, w{"quietly", 1}, w{"ruthlessly", 1},
		w{"thinly", 1}, w{"closely", 1}, w{"doggedly", 1}, w{"daringly", 1},
		w{"bravely", 1}, w{"stealthily", 1}, w{"permanently", 1},
		w{"enticingly", 1}, w{"idly", 1}, w{"busily", 1}, w{"regularly", 1},
		w{"finally", 1}, w{"ironically", 1}, w{"evenly", 1}, w{"boldly", 1},
		w{"silently", 1},
	)
	adjectives = newWeighted(
		w{"special", 20}, w{"pending", 20}, w{"unusual", 20}, w{"express", 20},
		w{"furious", 1}, w{"sly", 1}, w{"careful", 1}, w{"blithe", 1},
		w{"quick", 1}, w{"fluffy", 1}, w{"slow", 1}, w{"quiet", 1},
		w{"ruthless", 1}, w{"thin", 1}, w{"close", 1}, w{"dogged", 1},
		w{"daring", 1}, w{"brave", 1}, w{"stealthy", 1}, w{"permanent", 1},
		w{"enticing", 1}, w{"idle", 1}, w{"busy", 1}, w{"regular", 50},
		w{"final", 40}, w{"ironic", 40}, w{"even", 30}, w{"bold", 20},
		w{"silent", 10},
	)
	prepositions = newWeighted(
		w{"about", 50}, w{"above", 50}, w{"according to", 50}, w{"across", 50},
		w{"after", 50}, w{"against", 40}, w{"along", 40}, w{"alongside of", 30},
		w{"among", 30}, w{"around", 20}, w{"at", 10}, w{"atop", 1},
		w{"before", 1}, w{"behind", 1}, w{"beneath", 1}, w{"beside", 1},
		w{"besides", 1}, w{"between", 1}, w{"beyond", 1}, w{"by", 1},
		w{"despite", 1}, w{"during", 1}, w{"except", 1}, w{"for", 1},
		w{"from", 1}, w{"in place of", 1}, w{"inside", 1}, w{"instead of", 1},
		w{"into", 1}, w{"near", 1}, w{"of", 1}, w{"on", 1}, w{"outside", 1},
		w{"over", 1}, w{"past", 1}, w{"since", 1}, w{"through", 1},
		w{"throughout", 1}, w{"to", 1}, w{"toward", 1}, w{"under", 1},
		w{"until", 1}, w{"up", 1}, w{"upon", 1}, w{"whithout", 1}, w{"with", 1},
		w{"within", 1},
	)
	auxiliaries = newWeighted(
		w{"do", 1}, w{"may", 1}, w{"might", 1}, w{"shall", 1}, w{"will", 1},
		w{"would", 1}, w{"can", 1}, w{"could", 1}, w{"should", 1},
		w{"ought to", 1}, w{"must", 1}, w{"will have to", 1},
		w{"shall have to", 1}, w{"could have to", 1}, w{"should have to", 1},
		w{"must have to", 1}, w{"need to", 1}, w{"try to", 1},
	)
	terminators = newWeighted(
		w{".", 50}, w{";", 1}, w{":", 1}, w{"?", 1}, w{"!", 1}, w{"--", 1},
	)

	// The grammar: a sentence of noun phrases (N), verb phrases (V),
	// prepositional phrases (P) and a terminator (T); a noun phrase of
	// nouns (N), adjectives (J) and adverbs (D); a verb phrase of verbs
	// (V), auxiliaries (X) and adverbs (D).
	sentences = newWeighted(
		w{"N V T", 3}, w{"N V P T", 3}, w{"N V N T", 3}, w{"N P V N T", 1},
		w{"N P V P T", 1},
	)
	nounPhrases = newWeighted(
		w{"N", 10}, w{"J N", 20}, w{"J, J N", 10}, w{"D J N", 50},
	)
	verbPhrases = newWeighted(
		w{"V", 30}, w{"X V", 1}, w{"V D", 40}, w{"X V D", 1},
	)
)
