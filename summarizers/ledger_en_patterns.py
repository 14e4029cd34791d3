"""The words and phrasings the English ledger rules look for, compiled once.

Ordinary English meeting phrasing ("we'll go with", "I'll send", "can you ... by Friday", "we still need to
figure out"), not phrases of any one corpus; the matchers that apply them (`decision`, `todo`, `facts`,
`glossary`, `change`, ...) are in `ledger_en`. The underscored fragments are the parts the patterns are
built from; the public names are what the matchers use.
"""

from __future__ import annotations

import re

_FUTURE = r"(?:'ll|\s+will|\s+shall|'m going to|\s+am going to|'m gonna|\s+am gonna)"
_YOU_FUTURE = r"(?:'ll|\s+will|'re going to|\s+are going to|'re gonna|\s+are gonna)"
_THIRD_FUTURE = (r"(?:'ll|\s+will|\s+is going to|'s going to|\s+is gonna|'s gonna|\s+gonna|\s+should|\s+needs to|"
                 r"\s+has to|\s+have to|\s+are going to|\s+are gonna)")
_ADVERBS = r"(?:(?:also|just|then|probably|definitely|still|now|first|quickly|actually|already|uh|um)\s+)*"
#: Verbs of work done after the meeting. "Show", "tell", "explain" are left out: they happen in the room.
_ACTION_VERBS = (
    r"(?:send|e-?mail|mail|forward|write|draft|prepare|type|post|put up|upload|share|circulate|distribute|"
    r"look (?:into|at|for|up)|check|double-check|find out|find|figure out|follow up|talk to|speak (?:to|with)|"
    r"call|ask|contact|email|set up|book|schedule|arrange|organi[sz]e|make sure|update|fix|review|"
    r"investigate|research|get\s+back\s+to|finish|complete|work on|be working on|be looking (?:into|at)|"
    r"focus on|be focusing on|handle|take care of|sort out|create|build|design|come up with|deliver|test|"
    r"confirm|read|go through|think about|produce|do\s+(?:the|some|a|an|my|your|our|their)\b|"
    r"get\s+(?:hold|in\s+touch)|implement|evaluate|compile|collect|"
    r"gather|report|investigate|explore|buy|order|submit|send out|write up|put together|draw up|sketch|"
    r"work together|put|save|take\s+(?:the\s+|some\s+)?(?:minutes|notes)|be\s+thinking\s+about|be\s+in\s+charge|"
    r"rewrite|redo|re-do|revise|clean\s+up|tidy\s+up|refresh|renew|sign)")
_WEEKDAYS = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|monday|tuesday|wednesday|thursday|friday)"
#: Third-person present forms of the work verbs, for duties said as habits ("Tom sends the report").
_ACTION_VERBS_3RD = (r"(?:sends|emails|writes|drafts|prepares|posts|uploads|shares|circulates|checks|reviews|updates|"
                     r"runs|hosts|books|schedules|collects|compiles|reports|publishes|backs\s+up|files|calls)")
_ROLE_NOUNS = (r"(?:designer|manager|expert|engineer|lead|developer|analyst|specialist|executive|director|"
               r"owner|team|department|marketing|finance|legal|sales|ops|support)")
NAME = r"(?:[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2})"
NOT_NAMES = frozenset("""I We You He She They It This That There Here So And But Or Okay OK Ok Yeah Yes No Well
Then Now Right Alright All Maybe Also Just What Who Why How When Where Which Let Let's Oh Um Uh Mm Hmm Sure Good
Great Fine Thanks Thank Because If As At On In For From With By To Of The A An Our My Your Their Its Do Does Did
Can Could Would Should Will Shall May Might Must Is Are Was Were Be Been Please Actually Anyway Hi Hello Hey
Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April June July August September
October November December Euro Euros Dollar Dollars English Christmas""".split())
#: Words that open a sentence or join clauses and are never a name, compared case-blind: a capitalised
#: "Besides" or "For example" at the start of a sentence is talk, not a glossary term.
NOT_TERMS = frozenset(w.casefold() for w in NOT_NAMES) | frozenset("""
besides however anyway anyways actually basically meanwhile otherwise also example instance obviously
personally honestly frankly remember look listen sorry excuse guys everyone everybody team folks first second
third finally secondly thirdly lastly next then now well yes yeah no nope okay ok alright right sure
for example instance like um uh mm hmm oh ah so and but or nor yet although though unless whereas while
perhaps probably maybe definitely certainly indeed really just only even still again therefore thus hence
furthermore moreover additionally nevertheless nonetheless instead similarly likewise overall generally
hopefully unfortunately fortunately apparently clearly seriously literally totally absolutely exactly
good great fine nice cool awesome perfect excellent wonderful interesting true false kind sort type part
thing things stuff something anything nothing everything someone anyone nobody people person
""".split())

DECISION_RES = tuple(re.compile(p, re.I) for p in (
    r"\bwe(?:'ve| have)?\s+(?:just\s+|all\s+|already\s+)?(?:decided|agreed|settled|concluded|chosen|opted)\b",
    r"\b(?:it's|it is|it was|it has been|that's|that is|that was)\s+(?:been\s+)?(?:decided|agreed|settled)\b",
    r"\b(?:the|our|final)\s+decision\s+(?:is|was|will be)\b",
    r"\blet's\s+(?:just\s+|then\s+)?(?:go\s+(?:with|for)|use|stick\s+(?:with|to)|keep|choose|pick|drop|forget|"
    r"get\s+rid\s+of|leave\s+out|not\s+(?:use|go|include|have)|settle\s+on|opt\s+for)\b",
    r"\bwe(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to|'re\s+gonna|\s+are\s+gonna|'re|\s+are)?\s+"
    r"(?:just\s+|then\s+|definitely\s+|probably\s+)?(?:go(?:ing)?\s+(?:with|for)|stick(?:ing)?\s+(?:with|to)|"
    r"settle\s+on|opt\s+for|went\s+(?:with|for))\b",
    r"\bwe(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to|'re\s+gonna|\s+are\s+gonna)\s+"
    r"(?:just\s+|then\s+|definitely\s+)?(?:use|include|drop|keep|make\s+it|sell|target|"
    r"not\s+(?:use|have|include|need|do|go)|do\s+without|get\s+rid\s+of)\b",
    r"\bwe\s+(?:won't|will\s+not)\s+(?:need|use|include|go\s+for|have)\b",
    r"\b(?:so|okay|ok|alright|right)\b,?\s+(?:then\s+)?(?:it'll|it\s+will|it's\s+gonna|it\s+is\s+going\s+to|"
    r"it\s+should|it\s+has\s+to|it\s+must|that'll|that\s+will)\s+be\b",
    r"\bwe\s+want\s+(?:it|the\s+\w+)\s+to\s+be\b",
    r"\b(?:get\s+rid\s+of|forget\s+(?:about\s+)?the|scrap\s+the|kick\s+it\s+out)\b",
    r"\b(?:go|went)\s+with\s+(?:the|a|an)\b.*\binstead\b",
    r"\bthat's\s+(?:final|settled|decided|fixed)\b|\bso\s+(?:that's|that\s+is)\s+(?:agreed|settled)\b",
    r"\bwe\s+(?:should|must)\s+(?:definitely\s+)?(?:go\s+(?:with|for)|use|stick\s+(?:with|to))\b",
    # Negative decisions: "We're not going with the matte coating", "we won't be using the gold trim".
    r"\bwe(?:'re|\s+are)\s+(?:definitely\s+|just\s+)?not\s+(?:going\s+(?:with|for)|using|including|doing|"
    r"keeping|going\s+to\s+(?:use|go|include|have|do)|gonna\s+(?:use|go|include|have|do))\b",
    r"\bwe\s+(?:won't|will\s+not)\s+be\s+(?:using|including|going\s+with|doing|having)\b",
    r"\b(?:we(?:'re|\s+are)\s+(?:dropping|scrapping|ditching|cutting|skipping)|we\s+(?:dropped|scrapped|ditched|"
    r"rejected|ruled\s+out))\b",
    # The product as it will be: "the case will be double-curved", "it's gonna have a jog dial".
    r"^(?:(?:so|and|okay|um|uh|then|yeah)\W+)*(?:the|our)\s+(?:[\w-]+\s+){0,2}(?:will|'ll|is\s+gonna|is\s+going\s+to)\s+"
    r"(?:be|have|use|look|come)\b",
    # A recap in the present: "and we're incorporating voice recognition", "we're using a simple battery".
    r"\bwe(?:'re|\s+are)\s+(?:definitely\s+|also\s+)?(?:incorporating|including|using|adding|keeping|"
    r"putting\s+in|building\s+in|sticking\s+with)\b",
))
DECISION_BLOCK = re.compile(r"\b(?:if|whether|maybe|perhaps|not sure|don't know|shall we|should we|do we|"
                             r"could we|can we|might|wonder|why|for now|provisionally|debating|against it|"
                             r"have to|gonna have|going to have)\b|\?\s*$", re.I)

TODO_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("action", re.compile(r"\b(?:action\s+items?|to-?do|todo|next\s+steps?)\s*[:\-–]\s*(?P<task>\S.*)", re.I)),
    ("speaker", re.compile(rf"\b(?P<who>I){_FUTURE}\s+{_ADVERBS}(?:try\s+to\s+|make\s+sure\s+to\s+)?"
                           rf"(?P<task>{_ACTION_VERBS}\b.*)", re.I)),
    ("speaker", re.compile(rf"\blet\s+me\s+{_ADVERBS}(?P<task>{_ACTION_VERBS}\b.*)", re.I)),
    ("speaker", re.compile(rf"\bI\s+(?:need\s+to|have\s+to|must|can)\s+{_ADVERBS}(?P<task>{_ACTION_VERBS}\b.*)"
                           rf"(?=.*\b(?:next\s+(?:meeting|time|week)|after\s+the\s+meeting|later|tonight|by\b))",
                           re.I)),
    ("addressee", re.compile(rf"\b(?:can|could|would|will)\s+you\s+(?:please\s+)?{_ADVERBS}"
                             rf"(?P<task>{_ACTION_VERBS}\b.*)", re.I)),
    ("addressee", re.compile(rf"\byou(?:\s+(?:two|guys|all))?{_YOU_FUTURE}\s+(?:be\s+)?{_ADVERBS}"
                             rf"(?P<task>{_ACTION_VERBS}\b.*)", re.I)),
    ("addressee", re.compile(rf"\bI(?:'d\s+like|\s+would\s+like|\s+want|\s+need)\s+you(?:\s+(?:two|guys|all))?\s+"
                             rf"to\s+{_ADVERBS}(?P<task>\w.*)", re.I)),
    ("addressee", re.compile(r"\byour\s+(?:job|task|homework|assignment|action\s+item)\s+(?:is|will\s+be)\s+"
                             r"(?:to\s+)?(?P<task>\w.*)", re.I)),
    ("addressee", re.compile(rf"(?:^|[,.;]\s*|\band\s+|\bso\s+)(?:(?:um|uh|okay|maybe)\W+)*you(?:\s+(?:two|guys|all))?"
                             rf"(?:\s+(?:have|need)\s+to|\s+(?:can|could)(?=\s+(?:look|find|check|figure|research|"
                             rf"investigate)))\s+{_ADVERBS}(?P<task>{_ACTION_VERBS}\b.*)", re.I)),
    ("speaker", re.compile(rf"^(?:(?:um|uh|okay|so|and|well|but)\W+)*I\s+(?:need\s+to|have\s+to|'ve\s+got\s+to)\s+"
                           rf"{_ADVERBS}(?P<task>{_ACTION_VERBS}\b.*)", re.I)),
    # "Okay Rahul, please circulate the risk list by July 22nd." A request to a named person.
    ("name", re.compile(rf"(?:^|[,.;]\s*)(?:(?:[Uu]m|[Uu]h|[Oo]kay|[Ss]o|[Aa]nd|[Ww]ell)\W+)*(?P<who>{NAME}),?\s+"
                        rf"please\s+{_ADVERBS}(?P<task>{_ACTION_VERBS}\b.*)")),
    ("name", re.compile(rf"(?:^|[,;]\s*|\band\s+|\bso\s+|\bthen\s+)(?:(?:um|uh|okay|and|so|well)\W+)*"
                        rf"(?P<who>(?:the\s+)?{NAME}|the\s+(?:[a-z]+\s+)"
                        rf"{{0,2}}{_ROLE_NOUNS})(?:\s+(?:over\s+)?(?:here|there))?{_THIRD_FUTURE}\s+(?:be\s+)?{_ADVERBS}"
                        rf"(?P<task>{_ACTION_VERBS}\b.*)")),
    # Ownership said plainly: "Farida owns the vendor onboarding", "Marco is on the supplier contract",
    # "Lena takes care of the booth", "Priya is responsible for the test plan".
    ("name", re.compile(rf"(?:^|[,;]\s*|\band\s+|\bso\s+|\bthen\s+)(?:(?:um|uh|okay|and|so|well)\W+)*"
                        rf"(?P<who>(?:the\s+)?{NAME}|the\s+(?:[a-z]+\s+){{0,2}}{_ROLE_NOUNS})\s+"
                        rf"(?P<task>(?:owns|(?:is|'s)\s+(?:now\s+)?(?:on|handling|owning|in\s+charge\s+of|"
                        rf"responsible\s+for|taking\s+care\s+of|looking\s+after)|takes\s+care\s+of|handles|"
                        rf"looks\s+after|will\s+own|will\s+handle)\s+(?!the\s+(?:phone|call|line|way|"
                        rf"same|right|left)\b)(?:the|our|a|an|all|this|that|it|[A-Z])\b.*)")),
    ("speaker", re.compile(r"^(?:(?:um|uh|okay|so|and|well)\W+)*I(?:'m|\s+am)\s+(?:now\s+)?(?P<task>(?:on|"
                           r"handling|in\s+charge\s+of|responsible\s+for|taking\s+care\s+of|owning)\s+"
                           r"(?:the|our|this|that|it)\b.*)", re.I)),
    ("speaker", re.compile(r"^(?:(?:um|uh|okay|so|and|well)\W+)*I\s+(?P<task>(?:own|take\s+care\s+of|handle)\s+"
                           r"(?:the|our|this|that)\b.*)", re.I)),
    # A recurring duty: "Every Monday Tom sends the weekly report", "Tom sends the report every Monday".
    ("name", re.compile(rf"\b(?i:every|each)\s+(?:{_WEEKDAYS}|week|day|morning|month|sprint)\W+"
                        rf"(?P<who>{NAME})\s+(?P<task>{_ACTION_VERBS_3RD}\b.*)")),
    ("name", re.compile(rf"(?:^|[,;]\s*|\band\s+|\bso\s+)(?P<who>{NAME})\s+"
                        rf"(?P<task>{_ACTION_VERBS_3RD}\b.*\b(?:every|each)\s+(?:{_WEEKDAYS}|week|day|morning|"
                        rf"month|sprint)\b.*)")),
    ("group", re.compile(rf"\bwe(?:{_YOU_FUTURE}|\s+(?:need|have)\s+to|'ve\s+got\s+to)\s+{_ADVERBS}"
                         rf"(?P<task>{_ACTION_VERBS}\b.*?"
                         rf"\b(?:(?:for|before|by|until|at)\s+(?:the\s+)?next\s+(?:meeting|time|session)|"
                         rf"after\s+(?:the|this)\s+meeting)\b.*)", re.I)),
)
#: Things said in the room about the room: not commitments.
TODO_BLOCK = re.compile(r"\b(?:I'll\s+(?:just\s+)?(?:show|tell|explain|go\s+(?:back|over|through\s+(?:the|my)\s+"
                         r"slides?))|you\s+can\s+(?:see|do\s+(?:it|that|this)\b(?!\s+(?:by|for|before)))|"
                         r"if\s+you|when\s+you|you\s+know|I\s+don't|we\s+don't)\b", re.I)

OPEN_RES = tuple(re.compile(p, re.I) for p in (
    r"\bwe\s+(?:still\s+)?(?:need|have|'ve\s+got)\s+to\s+(?:figure\s+out|work\s+out|decide|find\s+out|"
    r"sort\s+out|determine|settle)\b.*\b(?:still|yet|later|whether|how|what|who|when|which)\b",
    r"\bwe\s+still\s+(?:need|have)\s+to\s+(?:figure|work|decide|find|sort|determine|settle)\b",
    r"\bopen\s+(?:question|issue|point)s?\b",
    r"\b(?:TBD|TBC|to\s+be\s+(?:decided|determined|confirmed|discussed))\b",
    r"\b(?:haven't|have\s+not|hasn't|not)\s+(?:yet\s+)?(?:decided|been\s+decided|settled|agreed\s+on)\b",
    r"\b(?:still|remains?)\s+(?:unclear|unknown|undecided|open|up\s+in\s+the\s+air|to\s+be\s+seen)\b",
    r"\b(?:we\s+don't|nobody|no\s+one)\s+(?:know|knows)\s+(?:yet\s+)?(?:whether|if|how|what|who|when|which)\b.*"
    r"\byet\b",
    r"\b(?:let's|we'll|we\s+can)\s+(?:park|come\s+back\s+to|revisit|table)\s+(?:that|this|it)\b",
))
QUESTION_RE = re.compile(r"^\s*(?:so\s+|and\s+|but\s+|um\s+|uh\s+)*(?:who|what|when|where|which|how|"
                          r"should\s+we|do\s+we|are\s+we|will\s+we|can\s+we)\b[^?]{8,}\?\s*$", re.I)
NON_ANSWER_RE = re.compile(r"^\W*(?:(?:um|uh|well|hmm|mm)\W+)*(?:I\s+(?:don't|do\s+not)\s+know|"
                            r"(?:I'm\s+)?not\s+sure|no\s+idea|good\s+question|dunno|I\s+have\s+no\s+idea|"
                            r"hard\s+to\s+say|no\s+one\s+knows|nobody\s+knows)\b", re.I)

_NUMBER_WORDS = (r"(?:(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|"
                 r"fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|"
                 r"ninety|hundred|thousand|million|billion|a\s+half|half)(?:[\s-]+(?:and\s+)?)?)+")
_NUMBER = rf"(?:\d[\d,]*(?:\.\d+)?|{_NUMBER_WORDS})"
_SCALE = r"(?:\s?(?:k|m|bn|thousand|million|billion)\b)?"
MONEY_RE = re.compile(
    rf"(?:[$€£¥]\s?\d[\d,]*(?:\.\d+)?{_SCALE}|\b{_NUMBER}{_SCALE}\s?(?:dollars?|euros?|pounds?|yuan|rmb|usd|eur|gbp|"
    rf"bucks|cents?)\b(?:\s+(?:and\s+)?{_NUMBER}\s?cents?\b)?)", re.I)
QUANTITY_RE = re.compile(
    rf"\b(?:\d[\d,]*(?:\.\d+)?%|{_NUMBER}\s?(?:percent|per\s?cent|units|users|people|customers|items|pieces|"
    r"copies|licen[cs]es|seats|hours|days|weeks|months|years|kilograms|kg|grams|tons|tonnes|meters|metres|"
    r"centimet(?:er|re)s|cm|mm|km|gb|tb|mb)\b)", re.I)
TIME_RE = re.compile(r"\b(?:[01]?\d|2[0-3])(?::[0-5]\d)?\s?(?:am|pm|a\.m\.|p\.m\.)|\b(?:[01]?\d|2[0-3]):[0-5]\d\b",
                      re.I)
WHAT_RE = re.compile(r"(?P<what>\b(?:the|our|a|an|their|this|its)\s+(?:[\w-]+\s+){0,3}?[\w-]+)\s+(?:is|are|was|"
                      r"were|will\s+be|would\s+be|should\s+be|has\s+to\s+be|must\s+be|'s|of|at|costs?|comes?\s+to|"
                      r"totals?|is\s+scheduled|is\s+planned|happens|takes\s+place|(?:kicks?\s+off|starts?|begins?|"
                      r"launch(?:es)?|goes\s+live|opens?)(?:\s+(?:in|at)\s+[A-Z][\w-]*(?:\s+[A-Z][\w-]*)?)?)\s+"
                      r"(?:(?:about|around|roughly|"
                      r"approximately|only|under|less\s+than|more\s+than|over|up\s+to|at\s+most|at\s+least|"
                      r"a\s+maximum\s+of|maximum|for|on|at|set\s+for|due)\s+)*$", re.I)
EVENT_WORDS = re.compile(r"\b(?:launch|release|deadline|meeting|review|demo|presentation|kick-?off|kicks?\s+off|"
                          r"workshop|delivery|ship|go-?live|goes\s+live|conference|interview|call|event|sprint|"
                          r"retro|offsite|cutover|rollout|appointment|pilot|trial|opening|starts|begins)\w*\b", re.I)

PRODUCT_RES = (
    re.compile(r"\b(?:[Pp]roject|[Cc]ode\s?name[d]?|[Oo]peration)\s+(?P<term>[A-Z][\w-]+)"),
    re.compile(r"\b(?P<term>[A-Z]{1,5}-\d{1,5}[A-Z]?)\b"),
    re.compile(r"\b(?P<term>[A-Z][a-z]+[A-Z][A-Za-z]+)\b"),
    re.compile(r"\b(?:called|named)\s+(?P<term>[A-Z][\w-]+(?:\s+[A-Z][\w-]+)?)"),
)
TERM_RE = re.compile(r"(?<![\w-])(?P<term>[A-Z]{2,6}s?|(?:[A-Z]_){2,6})(?![\w-])")
TERM_STOP = frozenset({"OK", "TV", "PM", "AM", "US", "UK", "EU", "I", "ID", "TBD", "TBC"})
PERSON_RES = (
    re.compile(rf"\b(?i:ask|tell|thanks|thank|with|cc|ping|email|call|from|and|to|for|by)\s+(?P<term>{NAME})"
               r"(?=\s*(?:[,.;!?]|$|\s+(?:and|about|to|will|can|said|says|is|has|'s)\b))"),
    re.compile(rf"(?:^|[,.;]\s+|\b(?:so|and|then)\s+)(?P<term>{NAME})(?:'ll|\s+will|\s+said|\s+says|\s+thinks|"
               r"\s+is\s+going\s+to|\s+takes|\s+owns)\b"),
    re.compile(rf"^(?:(?:okay|ok|so|right|and)\W+)?(?P<term>{NAME}),\s+(?:can|could|would|will|you|please|"
               r"what|do|are|how)\b", re.I),
)

CHANGE_RES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("owner", re.compile(rf"\b(?i:actually|instead|change\s+of\s+plan|scratch\s+that)\b.*?\b(?P<new>{NAME}|I)"
                         r"(?:'ll|\s+will|'s|\s+is)?\s+(?:take|takes|taking|handle|handles|handling|do|does|doing|"
                         r"own|owns|be\s+doing|be\s+taking)\s+(?:it|that|this|over|care\s+of\s+it)\b")),
    ("owner", re.compile(rf"\b(?P<new>{NAME})\s+(?:will\s+|'ll\s+|is\s+going\s+to\s+)?(?:take|takes|handle|"
                         r"handles|do|does)\s+(?:it|that|this)\s+instead\b")),
    ("owner", re.compile(rf"\b(?:hand|give|reassign|pass)\s+(?:it|that|this)\s+(?:over\s+)?to\s+(?P<new>{NAME})\b")),
    ("due", re.compile(r"(?P<topic>\b(?:the|our|that|this|it)\b[\w\s-]{0,30}?)?\s*(?:has\s+been\s+|is\s+|was\s+|"
                       r"got\s+|'s\s+|'ve\s+)?(?:moved|pushed|postponed|rescheduled|changed|shifted|delayed|"
                       r"brought\s+forward|move|push|change)\s+(?:it\s+|back\s+|out\s+)?(?:to|until|till)\s+"
                       r"(?P<new>.+)$", re.I)),
    ("due", re.compile(r"\bnot\s+(?:on\s+)?(?P<old>[^,;]+?)\s*(?:,|;|but|--|—)\s*(?:but\s+)?(?:on\s+)?(?P<new>.+)$",
                       re.I)),
    ("due", re.compile(r"\b(?:let's\s+)?make\s+it\s+(?P<new>.+?)\s+instead\b", re.I)),
    ("decision", re.compile(r"\b(?:instead|actually|on\s+second\s+thought|change\s+of\s+plan|scratch\s+that|"
                            r"rather\s+than|switch(?:ed)?\s+to)\b", re.I)),
)

STOPWORDS = frozenset("""a an the and or but so to of in on at for with by from is are was were be been it its
this that these those we i you he she they them us our your my me will would should could can shall 'll 's
just then also actually now not no yes okay ok um uh well like do does did have has had going gonna go
let's let instead moved move changed change takes take it's that's there what which who""".split())
WORD_RE = re.compile(r"[A-Za-z][A-Za-z'-]+")
SENTENCE_RE = re.compile(r"[^.!?;]+(?:[.!?;]+|$)")
