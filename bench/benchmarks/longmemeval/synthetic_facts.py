"""Word lists for the synthetic sample's evidence. Every name, title and place here is invented."""

from __future__ import annotations

ANIMALS = ("beagle", "tabby cat", "corgi", "parakeet", "rabbit", "border collie", "guinea pig", "greyhound")
PET_NAMES = ("Biscuit", "Mochi", "Pepper", "Juniper", "Clover", "Ziggy", "Nutmeg", "Tofu", "Maple", "Pixel", "Waffles", "Pickle")
RELATIONS = ("sister", "brother", "cousin", "aunt", "uncle", "best friend")
PEOPLE = ("Priya", "Tomas", "Ingrid", "Kwame", "Rosalind", "Haruto", "Delphine", "Mateo", "Anouk", "Bram")
CITIES = ("Lisbon", "Tucson", "Halifax", "Ljubljana", "Osaka", "Valparaiso", "Dunedin", "Tallinn", "Savannah", "Porto")
STORES = ("a flea market on Alder Street", "a little shop called Tin Lantern", "the outlet mall off Route 9",
          "an estate sale two streets over", "a thrift store called Second Wind", "the weekend craft fair at the old mill")
ITEMS = ("reading lamp", "leather satchel", "espresso machine", "standing desk", "record player", "rain jacket", "cast-iron skillet")
MAJORS = ("marine biology", "industrial design", "economics", "linguistics", "civil engineering", "art history")
MODES = ("bus", "bike", "train", "tram", "ferry")

TITLE_ADJ = ("Quiet", "Hollow", "Amber", "Distant", "Paper", "Salt", "Winter", "Crooked", "Silver", "Last")
TITLE_NOUN = ("Lighthouse", "Orchard", "Cartographer", "Harbour", "Archive", "Meridian", "Garden", "Ferryman", "Atlas", "Embers")
AUTHOR_FIRST = ("Elena", "Marcus", "Odile", "Farid", "Sunniva", "Caspar", "Lucia", "Tobias", "Imani", "Henrik")
AUTHOR_LAST = ("Varga", "Okafor", "Lindqvist", "Moreau", "Castellanos", "Whitcombe", "Nakamura", "Brennan", "Adeyemi", "Falk")
GENRES = ("mystery", "historical", "science fiction", "literary")
BLURBS = ("a slow-burning story with a twist near the end", "short chapters that make it easy to discuss",
          "a memorable narrator and a lot to argue about", "vivid settings and a tight cast of characters")

REGIONS = ("the Blue Ridge foothills", "the lake district up north", "the coastal cliffs", "the pine barrens")
TRAIL_A = ("Hawk", "Fern", "Cedar", "Granite", "Otter", "Lantern", "Thistle", "Beacon")
TRAIL_B = ("Ridge Loop", "Falls Trail", "Creek Path", "Summit Trail", "Meadow Loop")
TRAIL_FEATURES = ("a waterfall halfway along", "wide views from the top", "shaded forest most of the way", "a quiet lake at the end")

DISHES = ("a lemon herb focaccia", "a chickpea curry", "a mushroom barley soup", "a plum crumble")
INGREDIENTS = ("flour", "olive oil", "chickpeas", "onions", "garlic", "butter", "sugar", "mushrooms", "rolled oats", "coconut milk")
EXAMS = ("chemistry final", "driving theory test", "statistics exam", "history finals")
STUDY_SUBJECTS = ("practice problems", "flashcard review", "reading the textbook", "past papers", "summary notes")
WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

DIETS = {"vegetarian": "meat or fish", "vegan": "any animal products", "pescatarian": "red meat or poultry", "gluten-free": "wheat-based dishes"}
CUISINES = ("Thai", "Ethiopian", "Korean", "Mexican", "Lebanese", "Sichuan")
FLAVOURS = ("lots of fresh herbs", "anything smoky", "a serious amount of chilli", "crispy textures")
LANDSCAPES = ("the mountains", "old forest country", "lakeside villages", "high moorland")
HOLIDAY_ACTIVITIES = ("hiking between small villages", "cycling quiet back roads", "sketching and slow walks", "wild swimming and camping")
INSTRUMENTS = ("ukulele", "cello", "banjo", "piano", "bass guitar")
MUSIC_GENRES = ("bossa nova", "old-time folk", "90s indie rock", "film soundtracks", "Motown soul")
LOW_IMPACT = ("swimming", "rowing", "cycling", "yoga")
PODCAST_SUBJECTS = ("urban planning", "the history of science", "food and farming", "architecture")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December")

PLANTS = ("fern", "snake plant", "lavender bush", "lemon tree", "jade plant", "pothos", "rosemary", "fiddle-leaf fig")
GARDEN_THINGS = ("seed trays", "a rain barrel", "two bags of compost", "a new hose", "fence paint", "a wheelbarrow")
MUSEUMS = ("the maritime museum", "the museum of clocks", "the natural history museum", "the textile museum", "the railway museum", "the glass museum")
RACES = ("the harbour fun run", "the spring half-marathon", "the charity 5k", "the trail race at Cedar Hill", "the night run downtown")

# (noun phrase for questions, clause the user says, infinitive for "how many days ago did I ...")
EVENTS = (
    ("the pottery workshop", "I went to a pottery workshop downtown", "go to the pottery workshop"),
    ("my cousin's wedding", "I was at my cousin's wedding", "attend my cousin's wedding"),
    ("the dentist appointment", "I finally had my dentist appointment", "have my dentist appointment"),
    ("the charity 10k", "I ran the charity 10k", "run the charity 10k"),
    ("moving into my new apartment", "I moved into my new apartment", "move into my new apartment"),
    ("my job interview at Northwind", "I had my job interview at Northwind", "have my job interview at Northwind"),
    ("the family reunion", "we had the family reunion at the lake", "go to the family reunion"),
    ("my first swimming lesson", "I took my first swimming lesson", "take my first swimming lesson"),
    ("the book signing at the library", "I went to a book signing at the library", "go to the book signing at the library"),
    ("the jazz festival", "I went to the jazz festival in the park", "go to the jazz festival"),
    ("planting the vegetable garden", "I planted the vegetable garden", "plant the vegetable garden"),
    ("the wine-tasting class", "I took a wine-tasting class", "take the wine-tasting class"),
)
NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven")
ORDINALS = ("first", "second", "third", "fourth", "fifth")

JOB_LADDERS = (("research assistant", "data analyst", "analytics manager"), ("associate designer", "product designer", "design director"),
               ("staff nurse", "charge nurse", "nurse manager"), ("line cook", "sous chef", "head chef"))
COMPANIES = ("Brightwater Labs", "Kestrel Logistics", "St. Aldric Hospital", "the Copper Pot bistro", "Fenwick & Vale")
NEIGHBOURHOODS = ("Millbrook", "Ashford Heights", "the Old Quarter", "Riverside", "Elm Park", "Harbourview")
CARS = ("Honda Civic", "Subaru Outback", "Toyota Corolla", "Volkswagen Golf", "Mazda 3", "Ford Focus", "Kia Niro")
