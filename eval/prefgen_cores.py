"""What each interaction-preference setting sounds like, as content for eval.prefgen's frames.

Per (attribute, setting) of the IX inventory: `imp`, three base-form verb phrases that ask for it
(they follow "you'd", "to", "could you"), and `complaint`, two sentences that complain about the
opposite behaviour. Written for the generator, not copied from the training bank or any suite.
The generator splits them: imp[0:2] and complaint[0] go with the train families, imp[2] and
complaint[1] with the dev families, so dev wording is new in its frame and in its content.
"""

CORES: dict[tuple[str, str], dict[str, list[str]]] = {
    ("verbosity", "terse"): {
        "imp": ["answer in a single line", "cut it down to one sentence max", "reply with just a word or two"],
        "complaint": ["I asked a yes/no question and got a whole page", "I only ever need one line and you send paragraphs"]},
    ("verbosity", "brief"): {
        "imp": ["keep your answers shorter", "trim the replies down a lot", "make your messages way more compact"],
        "complaint": ["your replies are way too long for me to read", "these walls of text are exhausting to get through"]},
    ("verbosity", "detailed"): {
        "imp": ["go into much more depth", "explain things thoroughly with the background", "give me the long, thorough version"],
        "complaint": ["your answers are so thin I can't do anything with them", "that was far too shallow, I needed the whole picture"]},
    ("autonomy", "reactive"): {
        "imp": ["only do things when I tell you to", "hold off on everything until I say so", "wait for my instruction before doing anything"],
        "complaint": ["you keep doing stuff I never asked for", "I hate it when you start things on your own"]},
    ("autonomy", "suggest"): {
        "imp": ["propose things and let me approve them", "check with me before you do anything", "run every action past me first"],
        "complaint": ["you went ahead without asking me first", "you acted before I could even say yes"]},
    ("autonomy", "self_directed"): {
        "imp": ["handle notes and reminders yourself but ask before anything goes out",
                "sort out the internal stuff on your own and check with me before emailing anyone",
                "go ahead with drafts and calendar changes, just confirm before contacting people"],
        "complaint": ["asking me before every little reminder is too much, only the outside stuff needs my ok",
                      "I don't need to approve notes, only messages that go to other people"]},
    ("autonomy", "autonomous"): {
        "imp": ["go ahead and act without checking with me", "take care of things on your own without asking",
                "just handle it and tell me afterwards"],
        "complaint": ["you ask me for permission every single time and it drives me nuts",
                      "all these confirmation questions are slowing me down"]},
    ("reasoning_visibility", "show"): {
        "imp": ["show me how you got to the answer", "include the reasoning behind your suggestions",
                "lay out the why along with the what"],
        "complaint": ["you just give me conclusions with no explanation", "I can't trust an answer when I can't see the logic"]},
    ("reasoning_visibility", "hide"): {
        "imp": ["give me only the answer without the reasoning", "leave out the explanations and just say the result",
                "skip the justification and tell me the outcome"],
        "complaint": ["I don't need all the reasoning, just the answer", "the long explanations of why are getting in the way"]},
    ("process_visibility", "silent"): {
        "imp": ["stop sending progress updates and just tell me the result", "work quietly and only report the outcome",
                "keep the status messages to yourself until it's finished"],
        "complaint": ["all these progress pings are driving me mad", "I get five status updates for one small task"]},
    ("process_visibility", "bookend"): {
        "imp": ["tell me when you start a task and when it's done", "give me a note at the beginning and one at the end",
                "just let me know when something kicks off and when it wraps up"],
        "complaint": ["I never know whether you've started or finished anything", "I hear nothing at all and then suddenly it's done"]},
    ("process_visibility", "full_narration"): {
        "imp": ["talk me through every step while you work", "report each step as you go",
                "keep me updated on every single stage"],
        "complaint": ["I have no idea what you're doing while a task runs", "you go silent in the middle of a task and I hate that"]},
    ("elicitation", "infer"): {
        "imp": ["make reasonable guesses instead of asking me", "assume what you need and get on with it",
                "fill in the gaps yourself rather than quizzing me"],
        "complaint": ["you ask me way too many questions before doing anything", "being interrogated for every detail is tiring"]},
    ("elicitation", "structured"): {
        "imp": ["ask all your questions at once in one list", "put every question together up front",
                "collect your questions and send them in one batch"],
        "complaint": ["the drip feed of one question after another is annoying", "you keep coming back with yet another question"]},
    ("elicitation", "iterative"): {
        "imp": ["ask me one question at a time", "go question by question and wait for each answer",
                "give me a single question per message"],
        "complaint": ["you fired ten questions at me in one go", "a big list of questions all at once overwhelms me"]},
    ("topic_management", "follow"): {
        "imp": ["go through things in the order I mentioned them", "follow my order and skip the headings",
                "answer in the same sequence I brought things up"],
        "complaint": ["you reshuffle everything I say into sections", "I can't find my points once you regroup them under headings"]},
    ("topic_management", "organize"): {
        "imp": ["group your reply by topic with a heading for each", "sort the answer into sections by subject",
                "organise things under separate headings"],
        "complaint": ["your replies jump between subjects all over the place", "everything is mixed together in one messy block"]},
    ("topic_management", "one_at_a_time"): {
        "imp": ["deal with one topic at a time", "handle a single subject per reply",
                "take the topics one by one and leave the rest for later"],
        "complaint": ["you try to cover every topic in one go", "juggling all the subjects at once loses me"]},
    ("solution_breadth", "low"): {
        "imp": ["just recommend one option", "pick the best choice for me", "give me a single recommendation"],
        "complaint": ["you always give me a menu of options when I just want a pick", "five alternatives is too many, I can't choose"]},
    ("solution_breadth", "high"): {
        "imp": ["show me several alternatives to compare", "lay out a few different options",
                "give me a range of choices side by side"],
        "complaint": ["you only ever give me one option", "one recommendation isn't enough for me to decide"]},
    ("proactive_outreach", "low"): {
        "imp": ["leave it to me to get in touch", "stop messaging me unprompted",
                "wait for me to reach out rather than checking in"],
        "complaint": ["the random check-in messages are a bit much", "you pinging me out of the blue is intrusive"]},
    ("proactive_outreach", "high"): {
        "imp": ["check in on me now and then", "message me first when something's coming up",
                "reach out without waiting for me"],
        "complaint": ["you never check how things went", "I'd forget half my stuff because you never follow up with me"]},
    ("task_expansion", "as_asked"): {
        "imp": ["do exactly what I ask and nothing more", "stick strictly to the request",
                "keep to the task I gave you without extras"],
        "complaint": ["you keep adding extra tasks I didn't ask for", "I asked for one thing and you did four"]},
    ("task_expansion", "adjacent"): {
        "imp": ["take care of the related bits too", "handle the obvious follow-up tasks as well",
                "do the natural next steps without me spelling them out"],
        "complaint": ["you do exactly one thing and leave the obvious follow-ups to me",
                      "I always have to ask separately for the next step"]},
    ("formality", "formal"): {
        "imp": ["use a more professional tone", "write in proper formal language",
                "keep the register polite and businesslike"],
        "complaint": ["your tone is way too chatty for me", "the slang and jokes feel unprofessional"]},
    ("formality", "casual"): {
        "imp": ["talk to me in a relaxed way", "loosen up the tone a lot", "chat with me like a mate would"],
        "complaint": ["you sound like a legal letter", "the stiff corporate tone is off-putting"]},
    ("emotional_engagement", "task_focused"): {
        "imp": ["stay focused on the practical stuff", "leave my feelings out of it and get to the point",
                "concentrate on the task rather than my mood"],
        "complaint": ["all the talk about my feelings is too much", "I don't need a therapy session, just help with the thing"]},
    ("emotional_engagement", "empathetic"): {
        "imp": ["acknowledge how I'm feeling first", "be a bit more caring with me",
                "notice when I'm stressed and say something about it"],
        "complaint": ["you jump straight into logistics when I'm upset", "you sound cold when I'm having a hard time"]},
    ("feedback_directness", "gentle"): {
        "imp": ["soften the criticism a bit", "start with what's working before the problems",
                "go easier on me when you critique my stuff"],
        "complaint": ["your feedback is brutal", "the harsh criticism really knocks me down"]},
    ("feedback_directness", "direct"): {
        "imp": ["tell me plainly what's wrong", "give it to me straight without padding",
                "point out the problems bluntly"],
        "complaint": ["you wrap every criticism in so much padding I miss it", "all the sugar-coating hides what's actually wrong"]},
    ("uncertainty_disclosure", "explicit"): {
        "imp": ["flag it when you're unsure", "say how confident you are in each answer",
                "warn me when you might be wrong"],
        "complaint": ["you sound certain even when you're guessing", "I got burned because you didn't mention you weren't sure"]},
    ("uncertainty_disclosure", "minimal"): {
        "imp": ["drop the caveats and give me your best answer", "skip the disclaimers", "cut the hedging and just answer"],
        "complaint": ["every answer comes with three paragraphs of caveats", "the constant disclaimers are exhausting"]},
    ("error_reporting", "explicit"): {
        "imp": ["tell me about every error you hit", "report any mistake on your side",
                "let me know whenever something fails"],
        "complaint": ["you hid that the reminder failed", "I found out about the glitch days later"]},
    ("error_reporting", "quiet"): {
        "imp": ["fix small glitches quietly without telling me", "sort out minor errors yourself",
                "only bother me with problems that actually matter"],
        "complaint": ["I don't need a report about every tiny hiccup", "the error notices about trivial stuff are noise"]},
}


# Ordinary chat that states no preference about how to be helped, in families (eval.prefgen
# splits them as wholes): stories, questions, tasks and small talk that share words with the
# preference cores ("short", "detail", "quick", "options", "questions", "update", "formal",
# "explain", "step"). Each template takes a {name} (a person) and a {thing} (a topic); written
# for the generator, not copied from any suite. `CHAT[family] = (split, [templates])`.
CHAT: dict[str, tuple[str, list[str]]] = {
    "story_past": ("train", [
        "The meeting with {name} was short for once, we were done by ten.",
        "{name} told me every detail of the {thing} over dinner.",
        "Had a quick coffee with {name} before work.",
        "We kept the speech short at the wedding and people loved it.",
        "The instructor explained each step of the {thing} really slowly.",
        "My review of the {thing} went into way too much detail, I think.",
        "{name} gave me three options for the {thing} and I picked the cheapest.",
        "The update on my phone took forever last night.",
        "I asked {name} a ton of questions about the {thing}.",
        "the train ride was quick but the walk home was long",
        "Got a long email from {name} about the {thing} this morning.",
        "we had a very formal dinner with {name}'s parents",
    ]),
    "story_present": ("dev", [
        "{name} always writes these really long texts, it's kind of sweet.",
        "My days are short on sleep and long on coffee at the moment.",
        "The {thing} instructions go step by step, which is nice.",
        "I'm keeping the party small and casual this year.",
        "{name} is super direct with everyone, it's just how she is.",
        "the doctor walks me through every result in detail",
        "Work is quiet this week so I'm catching up on the {thing}.",
        "I check in on {name} most evenings since the surgery.",
        "We have a brief stand-up every morning at nine.",
        "{name} explains everything twice, bless him.",
        "My notes on the {thing} are a mess of bullet points.",
        "lunch was quick today, just a sandwich at my desk",
    ]),
    "question_task": ("train", [
        "Can you explain how the {thing} works?",
        "What's a quick recipe I could make tonight?",
        "Could you give me a few ideas for {name}'s birthday?",
        "How long does it take to learn the {thing}?",
        "What are my options for getting to the airport early?",
        "Any tips for keeping a toast short and sweet?",
        "Can you help me write a short note to {name}?",
        "What's the difference between a formal and a casual invitation?",
        "how do i give feedback to {name} without upsetting him",
        "Could you list the steps for repotting a plant?",
    ]),
    "question_chat": ("dev", [
        "Do you know a quick way to peel garlic?",
        "What should I ask {name} at the interview?",
        "Is a short haircut a good idea for summer?",
        "How detailed should a packing list be for a weekend?",
        "can you summarise the {thing} for me",
        "Which of these two options would suit a small flat better?",
        "Would you explain the rules of the {thing} to me?",
        "What's the best way to check in on a friend who's grieving?",
        "Could you tell me more about the {thing}?",
        "how many questions are on the driving theory test?",
    ]),
    "smalltalk": ("train", [
        "Short day today, heading home early!",
        "Quick question, is it going to rain tomorrow?",
        "long week, I'm knackered",
        "Just a quick hello before I go to bed.",
        "Ok that's all for now, talk later.",
        "haha that's exactly what {name} said",
        "thanks, that helps a lot",
        "Morning! Coffee first, then the {thing}.",
        "Sorry for the late reply, it's been a mad day.",
        "nothing much, just relaxing with {name}",
    ]),
    "smalltalk_reply": ("dev", [
        "Brief update: the {thing} is finally sorted.",
        "lol ok fair enough",
        "Thanks for the detailed answer yesterday, it worked.",
        "That was quick, cheers!",
        "Perfect, that's all I needed.",
        "ahh I see, makes sense now",
        "Nice, {name} will be happy to hear that.",
        "Cool cool, I'll try that tonight.",
        "Good to know, thanks.",
        "ok sounds good, speak tomorrow",
    ]),
    "others_style": ("train", [
        "{name} hates long meetings and always cuts them short.",
        "My manager writes in a very formal way, even in chat.",
        "{name}'s emails are two words long, it drives me mad.",
        "The new guy asks a hundred questions a day.",
    ]),
    "others_habit": ("dev", [
        "{name} gives really blunt feedback to everyone on the team.",
        "My mum sends me updates about every single thing she does.",
        "{name} never explains his reasoning, he just decides.",
        "The landlord checks in on us way too often.",
    ]),
}
# A question about a third party's wish, asking for help with a task ("my boss wants shorter
# reports, how do I write one?"): the wish is someone else's, nothing about how the companion helps.
CHAT["thirdparty_wish"] = ("train", [
    "My boss wants shorter reports, how do I write one?",
    "{name} prefers bullet points, can you help me format this?",
    "my manager wants more detail in my updates, how should I start?",
    "{name} likes a casual tone, what should I write in the card?",
    "Our client wants three options, could you help me come up with them?",
    "my teacher wants us to show our working, how do I do that for this problem?",
    "{name} hates long emails, what's the shortest way to say no?",
    "My boss wants fewer status updates from me, how often should I send one?",
    "{name} wants me to be more direct with the team, any advice?",
    "my landlord wants everything formal and in writing, can you help me draft a letter?",
])
CHAT["thirdparty_question"] = ("test", [
    "How do I write a report when {name} keeps asking for it to be shorter?",
    "What's a good way to give {name} the step-by-step detail she's asking for?",
    "can you help me figure out how formal to be? {name} said the client likes formal emails",
    "Any tips? The landlord expects very short, polite messages.",
    "how do i explain my reasons to {name}, he always wants the reasoning behind things",
    "My editor expects a one-line summary at the top, could you draft it?",
    "what should I say to {name}? she wants me to check in more often",
    "Is there a quick way to list options? The committee wants at least five.",
    "{name} asked for fewer questions in the survey, which ones should I cut?",
    "could you help me soften this? {name} wants gentler feedback in the reviews",
])
NAMES = {"train": ["Sam", "Lena", "Marco", "Aisha", "my sister"], "dev": ["Jonas", "Priya", "Tom", "Mia", "my cousin"],
         "test": ["Ravi", "Elena", "Kofi", "Hannah", "my neighbour"]}
THINGS = {"train": ["new bike", "tax return", "garden project", "pension plan", "kitchen renovation"],
          "dev": ["spreadsheet", "board game", "insurance claim", "camping trip", "sourdough"],
          "test": ["quarterly report", "wedding speech", "job application", "team survey", "grant proposal"]}
