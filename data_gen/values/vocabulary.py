"""The vocabulary of realistic values: names, companies, places, departments, free-text reasons,
and the word sets that tell what a parameter name is about (a person, money, a quantity, a date in
the past or the future, an identifier and its prefix).

Data, not logic: the name-based rules (`diaforge.data_gen.values.names`) and the shapes drawn from
descriptions (`diaforge.data_gen.values.described`) pick from these tables. Edit a table to change what the
generator says; keep entries fictitious (companies are the usual sample names) and free of commas
where a value is a single item.
"""

from __future__ import annotations

import re

from diaforge.text import param_tokens


def word_list(text: str) -> list[str]:
    """The words of a space-separated literal (keeps the tables below one line per idea)."""
    return text.split()


FIRST_NAMES = word_list(
    "Aisha Ben Carla Dmitri Elena Farid Grace Hiro Ines Jonas Kwame Lena Mateo Nadia Oliver Priya "
    "Quentin Rosa Sanjay Tomas Uma Victor Wen Yara Zoe Amara Lars Mei Noah Sofia Tariq Ingrid Diego "
    "Hannah Kenji Leila Marcus Olga Rafael Sunita"
)
LAST_NAMES = word_list(
    "Adams Bauer Chen Diallo Eriksen Fischer Garcia Haddad Ivanova Jensen Kowalski Lopez Moreau "
    "Nakamura Okafor Patel Quinn Rossi Schmidt Tanaka Usman Varga Wright Xu Yilmaz Zhang Novak Silva "
    "Murphy Kim Lindqvist Mendes Brennan Achebe Horvat Dubois Sato Kapoor Nielsen Romero"
)
COMPANIES = (
    "Northwind Traders",
    "Contoso Group",
    "Fabrikam Supplies",
    "Globex Logistics",
    "Initech Services",
    "Tailspin Aviation",
    "Wingtip Travel",
    "Litware Systems",
    "Adatum Consulting",
    "Proseware Analytics",
    "Woodgrove Partners",
    "Lucerne Publishing",
    "Alpine Ski House",
    "Coho Vineyard",
    "Fourth Coffee",
    "Blue Yonder Freight",
)
# One-word sample brands, for a service or a shop a description names by example ("e.g. 'Uber'").
BRANDS = tuple(dict.fromkeys(c.split()[0] for c in COMPANIES))
CURRENCIES = word_list("USD EUR GBP JPY CHF CAD AUD SEK NOK DKK INR SGD BRL MXN ZAR PLN CNY HKD NZD")
COUNTRY_CODES = word_list("US GB DE FR NL ES IT SE NO DK IE CH AT BE PL PT IN JP SG AU CA BR MX ZA")
COUNTRIES = word_list(
    "Germany France Spain Portugal Ireland Netherlands Sweden Norway Denmark Poland Italy Austria "
    "Switzerland Belgium India Japan Singapore Australia Canada Brazil Mexico"
)
CITIES = word_list(
    "Berlin London Paris Madrid Lisbon Dublin Amsterdam Toronto Chicago Austin Singapore Sydney "
    "Tokyo Zurich Stockholm Warsaw Bangalore Munich Boston Denver Seattle Vienna Prague Oslo"
) + ["New York", "San Francisco", "Sao Paulo", "Mexico City"]
OFFICES = ("HQ", "Building A", "Building C", "North Campus", "Riverside Office", "Floor 4")
DEPARTMENTS = (
    "Finance",
    "Human Resources",
    "Procurement",
    "Marketing",
    "Sales",
    "Engineering",
    "Customer Support",
    "Legal",
    "Operations",
    "IT Services",
    "Facilities",
    "Supply Chain",
    "Treasury",
    "Internal Audit",
)
PROJECTS = (
    "Atlas Migration",
    "Project Orion",
    "Helios Data Platform",
    "Phoenix CRM Rollout",
    "Nimbus Cloud Move",
    "Project Meridian",
    "Keystone ERP Upgrade",
    "Aurora Analytics",
    "Beacon Onboarding Revamp",
    "Project Cobalt",
)
TEAMS = (
    "Platform Engineering",
    "Payroll Operations",
    "Field Sales East",
    "Data Science",
    "Vendor Management",
    "Service Desk",
    "Talent Acquisition",
    "Revenue Accounting",
)
PRODUCTS = (
    "Latitude 7450 laptop",
    "ergonomic desk chair",
    "27-inch monitor",
    "noise-cancelling headset",
    "docking station",
    "standing desk",
    "wireless keyboard",
    "conference speakerphone",
    "A4 printer paper",
    "USB-C charger",
)
COURSES = (
    "Advanced Excel for Analysts",
    "Cloud Architecture Fundamentals",
    "Negotiation Skills Workshop",
    "Project Management Essentials",
    "Data Privacy Awareness",
    "Leading Hybrid Teams",
    "Python for Finance",
    "Effective Presentations",
)
JOB_TITLES = (
    "Financial Analyst",
    "Software Engineer",
    "Procurement Specialist",
    "HR Business Partner",
    "Account Manager",
    "Operations Lead",
    "Data Analyst",
    "Payroll Coordinator",
)
TITLES = (
    "Quarterly budget review",
    "New hire onboarding checklist",
    "Vendor contract renewal",
    "Laptop refresh request",
    "Team offsite planning",
    "Access request for the finance share",
    "Monthly close follow-up",
    "Client workshop preparation",
)
FREE_TEXT = (
    "quarterly onboarding refresher",
    "client workshop in the Berlin office",
    "replacement for a broken laptop",
    "annual compliance training deadline",
    "team offsite planning session",
    "vendor invoice is past due",
    "budget approved by the finance director",
    "covering for a colleague on leave",
    "migration of the reporting dashboards",
    "customer escalation needs a quick fix",
    "renewal of the expiring software licence",
    "new starter joining the support team",
    "travel to the regional sales kickoff",
    "equipment needed for the new project",
    "follow-up from the last audit review",
    "certification required for the cloud migration",
    "duplicate charge on the corporate card",
    "headcount change after the reorganisation",
    "speaking slot at a data conference",
    "quarter end reconciliation of open items",
    "security patch for the payroll system",
    "move to the new Lisbon office",
    "pilot run with the procurement team",
    "mentoring programme for junior analysts",
    "please process before month end",
    "agreed with my manager last week",
    "needed for the product launch",
    "replaces the cancelled booking",
)
WORDS = word_list(
    "harbor summit ledger beacon cobalt meridian orbit cedar falcon granite horizon juniper "
    "keystone lumen maple nova onyx pioneer quartz ridge sierra tundra vector willow zenith "
    "aspen delta ember fjord glacier"
)
STREETS = ("Market Street", "Harbour Road", "Elm Avenue", "King Street", "Park Lane", "Mill Road")
REGIONS = ("EMEA", "APAC", "AMER", "LATAM", "NA")
TIMEZONES = ("Europe/Berlin", "Europe/London", "America/New_York", "America/Chicago", "Asia/Singapore")
LANGUAGES = ("en", "de", "fr", "es", "ja", "pt", "it", "nl")
LOCALES = ("en-US", "en-GB", "de-DE", "fr-FR", "es-ES", "ja-JP")
STATUSES = ("open", "pending", "approved", "rejected", "closed", "on_hold")
PRIORITIES = ("low", "medium", "high", "critical")
#: Clinical terms a person reports as an event, symptom or reaction (MedDRA-style preferred terms).
MEDICAL_TERMS = (
    "headache",
    "nausea",
    "dizziness",
    "skin rash",
    "fatigue",
    "injection site pain",
    "shortness of breath",
    "vomiting",
    "fever",
    "insomnia",
    "pneumonia",
    "cough",
    "chest pain",
    "back pain",
)
MEDICAL_WORDS = frozenset(["symptom", "symptoms", "diagnosis", "adverse", "allergy", "allergen"])
#: Words of a parameter's description that make an event or a term a clinical one.
MEDICAL_CONTEXT = re.compile(r"\b(?:meddra|adverse|clinical|patient|symptom|medical|treatment)", re.I)
#: Medical specialties a referral names.
SPECIALTIES = ("cardiology", "dermatology", "neurology", "orthopaedics", "gastroenterology", "oncology")
UNITS = ("EA", "kg", "hours", "box", "pack", "litre")
FILE_EXTS = ("pdf", "xlsx", "docx", "csv", "pptx")
#: Extensions a file name or path keeps as its example or description says them ("image.png").
KNOWN_EXTS = frozenset(
    word_list(
        "pdf xlsx xls docx doc csv tsv pptx txt json xml yaml yml png jpg jpeg gif svg mp3 mp4 wav zip html md parquet"
    )
)
#: Words of a parameter's name that make its value a dish ("food_item", "meal_name").
FOOD_WORDS = frozenset(word_list("food foods meal meals dish dishes recipe snack ingredient"))
FOODS = (
    "chicken Caesar salad",
    "margherita pizza",
    "vegetable curry",
    "salmon with rice",
    "lentil soup",
    "oatmeal with berries",
    "beef burrito",
    "Greek yogurt",
)
#: Musical keys, for a key a melody or a chord progression is in.
MUSIC_KEYS = ("C major", "G major", "D major", "A minor", "E minor", "F major", "B-flat major")
MUSIC_CONTEXT = re.compile(r"\b(?:melody|chord|music|musical|song|scale|major|minor|tune)", re.I)
COUNTIES = ("Cook County", "King County", "Orange County", "Travis County", "Suffolk County", "Dane County")

# The uppercase prefix of a generated identifier, by the words in front of `_id`.
ID_PREFIXES = {
    k.replace("_", " "): v
    for k, v in (
        pair.split("=")
        for pair in word_list(
            "employee=EMP request=REQ invoice=INV ticket=TKT order=ORD purchase_order=PO training_request=TR "
            "project=PRJ vendor=VND supplier=SUP customer=CUST client=CLI asset=AST contract=CTR case=CASE "
            "incident=INC change=CHG account=ACC user=USR report=RPT expense=EXP expense_report=ER "
            "booking=BKG reservation=RSV policy=POL claim=CLM shipment=SHP product=PRD item=ITM course=CRS "
            "candidate=CAN position=POS job=JOB requisition=REQ department=DEP team=TEAM budget=BUD "
            "approval=APR document=DOC meeting=MTG room=RM device=DEV license=LIC licence=LIC transaction=TXN "
            "payment=PAY quote=QTE opportunity=OPP lead=LEAD task=TSK warehouse=WH store=STR location=LOC "
            "manager=MGR trip=TRP leave=LV leave_request=LR timesheet=TS promo=PROMO discount=SAVE "
            "voucher=VCH"
        )
    )
}
ID_WORDS = {"id", "ids", "number", "no", "num", "ref", "reference", "code", "key", "identifier"}
#: Words of a ``*_name`` that make it an animal's name ("pet_name", "The animal's name").
ANIMAL_WORDS = frozenset(word_list("pet pets animal animals dog dogs cat cats horse horses puppy kitten"))
#: Names of pets.
PET_NAMES = (
    "Biscuit",
    "Luna",
    "Milo",
    "Bella",
    "Max",
    "Daisy",
    "Pepper",
    "Poppy",
    "Teddy",
    "Coco",
    "Ollie",
    "Willow",
)
#: Words a parameter's description opens with that name a person ("Staff member who ...").
PERSON_HEADS = frozenset(
    word_list("person staff member colleague user customer clinician scientist who whom")
)
PERSON_WORDS = frozenset(
    word_list(
        "manager approver assignee owner requester requestor employee reviewer contact recipient attendee "
        "traveler traveller candidate delegate person sponsor supervisor participant guest member author "
        "submitter beneficiary payee host"
    )
)
#: Words before ``name`` in a parameter's name that make it a person's name ("patient_name",
#: "full_name"); any other word names a thing ("exam_name", "hotel_name": `Draws._named_thing`).
PERSON_NAME_WORDS = frozenset(
    word_list(
        "full display first last given family middle nick patient doctor physician nurse passenger "
        "therapist president resident visitor driver rider student teacher instructor coach player artist "
        "actor singer winner buyer seller tenant landlord pilot pope papal king queen character friend "
        "parent child spouse agent representative rep advisor adviser lawyer attorney dentist pharmacist "
        "technician engineer developer speaker presenter interviewer interviewee applicant volunteer donor "
        "sender caller signer signatory witness holder cardholder nominee director officer chair founder "
        "vet customer user staff colleague clinician scientist"
    )
)
#: Words a parameter's name holds when its value is a secret ("api_token", "password").
SECRET_WORDS = frozenset(word_list("token password passcode passphrase secret pwd"))
COMPANY_WORDS = frozenset(
    word_list(
        "vendor supplier company customer client organisation organization org business partner merchant "
        "carrier employer utility provider insurer lender bank airline agency firm manufacturer distributor "
        "retailer wholesaler brewery competitor counterparty entity"
    )
)
FREE_TEXT_WORDS = frozenset(
    word_list(
        "reason justification description comment comments note notes message purpose details explanation "
        "remarks remark feedback body text instructions objective rationale memo context"
    )
)
TITLE_WORDS = {"title", "subject", "summary", "headline", "topic", "agenda"}
MONEY_WORDS = frozenset(
    word_list(
        "amount cost costs price budget salary total fee fees balance spend payment expense charge "
        "subtotal tax bonus compensation refund deposit value allowance credit debit wage rent premium"
    )
)
QUANTITY_WORDS = frozenset(
    word_list(
        "quantity qty count seats units headcount licenses licences nights days attendees participants "
        "copies guests people items tickets rooms weeks months installments instalments hours "
        "bags baggages luggage pieces passengers adults children travellers travelers"
    )
)
PERCENT_WORDS = frozenset(
    word_list("percent percentage pct discount rate probability utilization utilisation")
)
PAST_DATE_WORDS = frozenset(
    word_list(
        "since invoice invoiced hire hired joined joining created issued issue purchase purchased "
        "incurred expense transaction last occurred incident submitted received receipt posted paid "
        "signed opened completed completion previous past modified updated"
    )
)
FUTURE_DATE_WORDS = frozenset(
    word_list(
        "start starting due travel delivery deliver departure depart return end deadline expiry "
        "expiration expires scheduled schedule check arrival event meeting launch effective renewal until "
        "target follow appointment booking next planned go live termination leave trip valid"
    )
)


def toggle_plural(word: str) -> str:
    """``reports`` <-> ``report``, ``categories`` <-> ``category``: a word's other number."""
    low = word.lower()
    if low.endswith("ies") and len(low) > 4:
        return word[:-3] + "y"
    if low.endswith("s") and not low.endswith("ss") and len(low) > 2:
        return word[:-1]
    if low.endswith("y") and len(low) > 2 and low[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def singular(name: str) -> str:
    """A list parameter's item name: ``cost_centers`` -> ``cost_center`` (names its items' values)."""
    tokens = param_tokens(name)
    if not tokens:
        return name
    last = tokens[-1]
    if last.endswith("s") and not last.endswith("ss"):
        tokens[-1] = toggle_plural(last)
    return "_".join(tokens)


AIRPORTS = word_list(
    "FRA MUC BER HAM LHR LGW CDG AMS MAD BCN LIS DUB ZRH VIE CPH ARN OSL WAW JFK ORD SFO BOS SIN NRT"
)
COUNTRY_CODES3 = word_list(
    "USA GBR DEU FRA NLD ESP ITA SWE NOR DNK IRL CHE AUT BEL POL PRT IND JPN SGP AUS CAN BRA"
)


def _vocab_by_len() -> dict[int, tuple[str, ...]]:
    """Lower-case words by their length, in sorted order: a small-letter run of an example is
    redrawn as a word of the same length."""
    by_len: dict[int, tuple[str, ...]] = {}
    extra = word_list(
        "ops data team desk sales audit cloud north south east west spring autumn winter summer"
    )
    for word in sorted({w.lower() for w in (*WORDS, *FIRST_NAMES, *LAST_NAMES) if w.isalpha()} | set(extra)):
        by_len[len(word)] = (*by_len.get(len(word), ()), word)
    return by_len


VOCAB_BY_LEN = _vocab_by_len()
E164_COUNTRIES = ("1", "44", "49", "33", "34", "31", "46", "39", "41", "65", "61", "81")
